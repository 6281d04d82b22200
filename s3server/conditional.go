package s3server

import "strings"

// etagMatches compares If-Match (a list, or "*") with an ETag, quotes
// optional as S3 accepts them either way.
func etagMatches(ifMatch, etag string) bool {
	if etag == "" {
		return false
	}
	etag = strings.Trim(etag, `"`)
	for _, c := range strings.Split(ifMatch, ",") {
		c = strings.TrimSpace(c)
		if c == "*" || strings.Trim(c, `"`) == etag {
			return true
		}
	}
	return false
}
