package expr

// Implied is a condition over the columns keep accepts alone that holds
// wherever the condition n holds, or nil when n says nothing of them
// alone: n's top-level "and" terms and "or" alternatives kept as they
// are where they read only such columns, and dropped where they read
// others (an "and" term dropped leaves the rest; an "or" alternative
// dropped leaves nothing). A join's --where so gives each side a filter
// to apply before the join: TPC-H Q19's three alternatives, each of a
// part's brand, containers and sizes and a lineitem's quantities, give
// the parts of three brands and the quantities from 1 to 30.
func Implied(n Node, keep func(column string) bool) Node {
	if b, ok := n.(*binary); ok && (b.op == "and" || b.op == "or") {
		x, y := Implied(b.x, keep), Implied(b.y, keep)
		switch {
		case x != nil && y != nil:
			if x == b.x && y == b.y {
				return n
			}
			return &binary{op: b.op, x: x, y: y, pos: b.pos}
		case b.op == "and" && x != nil:
			return x
		case b.op == "and" && y != nil:
			return y
		}
		return nil
	}
	names := ColumnNames(n)
	if len(names) == 0 {
		return nil
	}
	for _, c := range names {
		if !keep(c) {
			return nil
		}
	}
	return n
}
