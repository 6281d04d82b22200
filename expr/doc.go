// Package expr is sluice's one expression language: the grammar, the
// type checker and the vectorised evaluator behind scan's --filter, the
// filter stage, agg-by's arguments and every other expression, so a text
// that one of them accepts means the same in all of them.
//
// An expression is parsed once (Parse), bound to a schema (Bind or
// Compile), which checks its columns and types before any data is read,
// and evaluated over Arrow record batches (Expr.Eval) a column at a time:
// no per-row interface call on the hot paths. A caller evaluating batch
// after batch passes a Scratch (Expr.EvalScratch), from which the
// evaluation takes its slices again each time, so its memory stays that
// of one batch. Comparisons follow SQL: a
// comparison with null is null, and/or are three-valued, and a quoted
// string compared with a date or timestamp is read as one
// (l_shipdate <= '1998-09-02').
//
// Besides comparisons, logic and arithmetic there are CASE, cast, and
// string, date and number functions, each with DuckDB's semantics and
// nulls (bench/pipeline/duckdb checks them against DuckDB), except that a
// value DuckDB refuses at run time (a cast that does not convert, the
// square root of a negative number) is null here. Array stores a value
// as an Arrow column: exec's select and extend make computed columns so.
//
// For readers that can skip data by statistics, Conjuncts lists what the
// top-level "and" terms of a bound filter say about single columns
// (column op constant, in, between, is null, and "or"s of those); the
// rest is for the evaluator.
//
// Mistakes are an *Error with the 1-based character position of the
// problem; a column the input lacks is also a *ColumnError.
//
// expr is not a query planner: there are no joins, subqueries or
// aggregates here (exec's agg-by uses ParseList and Bind for its
// arguments), and it reads only the columns of one batch.
package expr
