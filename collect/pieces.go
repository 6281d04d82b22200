package collect

import "github.com/sluice-data/sluice/scan"

// Piece is row groups [Lo, Hi) of one file of a dataset: File is its
// index in the dataset's Files, Lo and Hi row group indices in the file.
type Piece struct{ File, Lo, Hi int }

// Pieces cuts the row groups a scan reads (scan.Dataset.Plan, in dataset
// order) into the pieces of work GetFlightInfo makes endpoints of: whole
// files, and contiguous row group ranges of files of at least twice size
// bytes, each about size to twice size bytes. Package dist gives each to a
// map task.
func Pieces(plan []scan.RowGroup, size int64) []Piece {
	ps := pieces(plan, size)
	out := make([]Piece, len(ps))
	for i, p := range ps {
		out[i] = Piece{p.file, p.lo, p.hi}
	}
	return out
}

// PiecePattern is a scan pattern, in the dataset's store, that names the
// file key of the dataset pattern alone and reads it with the dataset's
// partition root (so its key=value columns are those of the whole
// dataset's scan): the pattern DoGet scans a piece with. prefix is the
// served root's prefix ("" for none).
func PiecePattern(prefix, dataset, key string) (string, error) {
	return piecePattern(prefix, dataset, key)
}
