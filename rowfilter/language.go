package rowfilter

import (
	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// Language is the filter language as the pipeline uses it.
type Language struct{}

var _ cdc.RowFilters = Language{}

// Bind parses text and binds it to sc.
func (Language) Bind(text string, sc *iceberg.Schema) (func(values.Row) bool, error) {
	f, err := Parse(text)
	if err != nil {
		return nil, err
	}
	b, err := f.Bind(sc)
	if err != nil {
		return nil, err
	}
	return b.Keep, nil
}

// Redact is the package's Redact.
func (Language) Redact(text string) string { return Redact(text) }
