//go:build !linux

package sysmem

func machine() int64 { return 0 }
