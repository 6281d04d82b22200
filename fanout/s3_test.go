package fanout

type fetchRequest struct {
	key  string
	size int64
}
