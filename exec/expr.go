package exec

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/expr"
)

// Expressions are package expr's; these names keep the operators short.
type (
	vec  = expr.Vec
	kind = expr.Kind
)

const (
	kBool    = expr.KindBool
	kInt     = expr.KindInt
	kFloat   = expr.KindFloat
	kString  = expr.KindString
	kDate    = expr.KindDate
	kTime    = expr.KindTime
	kDecimal = expr.KindDecimal
)

// exprError marks a mistake in an expression as a mistake in how the
// pipeline is written, keeping the *expr.Error (and its *expr.ColumnError)
// for errors.As.
type exprError struct {
	stage string
	err   error
}

func (e *exprError) Error() string        { return e.stage + ": " + e.err.Error() }
func (e *exprError) Unwrap() error        { return e.err }
func (e *exprError) Is(target error) bool { return target == ErrInvalid }

func stageExprError(stage string, err error) error {
	if err == nil {
		return nil
	}
	return &exprError{stage: stage, err: err}
}

func columnList(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
