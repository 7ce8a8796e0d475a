package source

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/values"
)

// valueAt converts the value at row i of arr, an array of Iceberg type typ,
// to the Go value values.Row documents (values.ArrowValue, which the encoders'
// Arrow path mirrors). A value whose Arrow type does not fit typ is an
// error naming both: icecdc never guesses a value.
func valueAt(arr arrow.Array, i int, typ iceberg.Type) (any, error) {
	return values.ArrowValue(arr, i, typ)
}
