package dist

type fetchRequest struct {
	key  string
	size int64
}
