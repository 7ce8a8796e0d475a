package replay

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// CheckChangedFields checks an update's changed_fields against its images
// as a consumer reads them: every path named must differ between before
// and after, and every difference must be named, either by its own path
// or by that of an enclosing field named whole (a struct that became
// null, a list or a map). Paths join field names with '.'.
func CheckChangedFields(ev Event) error {
	if ev.ChangedFields == nil {
		return fmt.Errorf("update without changed_fields")
	}
	named := map[string]bool{}
	for _, p := range ev.ChangedFields {
		if named[p] {
			return fmt.Errorf("changed_fields names %q twice", p)
		}
		named[p] = true
		b, bok := lookup(ev.Before, p)
		a, aok := lookup(ev.After, p)
		if bok && aok && reflect.DeepEqual(b, a) {
			return fmt.Errorf("changed_fields names %q, whose value %v is the same before and after", p, b)
		}
	}
	return covered(named, "", ev.Before, ev.After)
}

// covered checks that every difference between before and after under
// prefix is named in changed.
func covered(changed map[string]bool, prefix string, before, after map[string]any) error {
	keys := make([]string, 0, len(before)+len(after))
	for k := range before {
		keys = append(keys, k)
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		b, a := before[k], after[k]
		if reflect.DeepEqual(b, a) || changed[path] {
			continue
		}
		bm, bok := b.(map[string]any)
		am, aok := a.(map[string]any)
		if bok && aok {
			if err := covered(changed, path, bm, am); err != nil {
				return err
			}
			continue
		}
		return fmt.Errorf("%q changed from %v to %v, but changed_fields %q does not name it", path, b, a, keysOf(changed))
	}
	return nil
}

// lookup follows a dotted path through nested objects.
func lookup(m map[string]any, path string) (any, bool) {
	var v any = m
	for part := range strings.SplitSeq(path, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = o[part]; !ok {
			return nil, false
		}
	}
	return v, true
}

func keysOf(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
