package exec

import "slices"

// SortOf returns the keys of a sort stage; ok is false for other stages.
// Package fanout runs a sort after a shuffle in its reducers and merges
// their sorted outputs by these keys.
func SortOf(s Stage) (keys []SortKey, ok bool) {
	st, ok := s.(*sortStage)
	if !ok {
		return nil, false
	}
	return slices.Clone(st.keys), true
}
