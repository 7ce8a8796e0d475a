package sinkkind

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/icecdc/icecdc/cdc"
)

// placeholder finds a name template's placeholders.
var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

// ExpandName expands a per-table name template (a Kafka topic, an
// OpenSearch index): {namespace}, {table}, {catalog} and {pipeline}.
func ExpandName(tmpl string, t *cdc.TableInfo, pipeline string) string {
	return strings.NewReplacer(
		"{namespace}", t.Namespace,
		"{table}", t.Name,
		"{catalog}", t.Catalog,
		"{pipeline}", pipeline,
	).Replace(tmpl)
}

// CheckNameTemplate refuses a placeholder ExpandName does not know, and
// {pipeline} in a pipeline without a name.
func CheckNameTemplate(tmpl, pipeline string) error {
	var errs []error
	for _, p := range placeholder.FindAllString(tmpl, -1) {
		switch p {
		case "{namespace}", "{table}", "{catalog}":
		case "{pipeline}":
			if pipeline == "" {
				errs = append(errs, errors.New("{pipeline} used but the pipeline has no name"))
			}
		default:
			errs = append(errs, fmt.Errorf("unknown placeholder %s in %q", p, tmpl))
		}
	}
	return errors.Join(errs...)
}
