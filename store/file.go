package store

func openFile(rawURL, p string) (Driver, string, string, error) {
	return nil, "", "", &Error{Op: "open", URL: rawURL, Kind: KindInvalid, Err: ErrInvalid}
}
