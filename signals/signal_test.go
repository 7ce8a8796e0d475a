package signals_test

import (
	"strings"
	"testing"

	"github.com/icecdc/icecdc/signals"
	"github.com/icecdc/icecdc/snapreq"
)

// TestParse reads Debezium's signal values as its channels write them
// and refuses what icecdc cannot do with one line naming the field.
func TestParse(t *testing.T) {
	tables := []string{"shop.orders", "shop.items", "crm.people"}
	a, err := signals.Parse([]byte(`{"id": "1", "type": "execute-snapshot", "data": "{\"data-collections\": [\"shop\\\\..*\"], \"type\": \"BLOCKING\", \"additional-condition\": \"id > 3\"}"}`), tables)
	if err != nil || a.Kind != signals.KindBlocking || strings.Join(a.Tables, ",") != "shop.orders,shop.items" ||
		a.Filters["shop.orders"] != "id > 3" || a.Filters["shop.items"] != "id > 3" {
		t.Errorf("data as a JSON string, blocking, additional-condition: %+v, %v", a, err)
	}
	a, err = signals.Parse([]byte(`{"id": "2", "type": "execute-snapshot", "data": {"data-collections": ["CRM.PEOPLE", "shop.items"],
		"additional-conditions": [{"data-collection": "crm\\..*", "filter": "name = 'x'"}, {"data-collection": ".*", "filter": "id = 1"}]}}`), tables)
	if err != nil || a.Kind != signals.KindIncremental || strings.Join(a.Tables, ",") != "shop.items,crm.people" ||
		a.Filters["crm.people"] != "name = 'x'" || a.Filters["shop.items"] != "id = 1" {
		t.Errorf("case-insensitive names, the first condition per table: %+v, %v", a, err)
	}
	a, err = signals.Parse([]byte(`{"id": "3", "type": "stop-snapshot", "data": {"data-collections": ["shop.items"], "type": "incremental"}}`), tables)
	if err != nil || a.Control != snapreq.StopSnapshot || strings.Join(a.Tables, ",") != "shop.items" {
		t.Errorf("stop-snapshot of one table: %+v, %v", a, err)
	}
	a, err = signals.Parse([]byte(`{"id": "4", "type": "pause-snapshot"}`), tables)
	if err != nil || a.Control != snapreq.PauseSnapshot || len(a.Tables) != 3 {
		t.Errorf("pause-snapshot without data: %+v, %v", a, err)
	}
	for _, tc := range []struct{ value, want string }{
		{`{"id": "5", "type": "execute-snapshot", "data": {"data-collections": ["shop.orders"], "surrogate-key": "id"}}`, "data.surrogate-key: not accepted"},
		{`{"id": "6", "type": "execute-snapshot", "data": {"data-collections": []}}`, "data.data-collections: missing or empty"},
		{`{"id": "7", "type": "execute-snapshot", "data": {"data-collections": ["shop.orders"], "type": "initial"}}`, `data.type "initial": want incremental or blocking`},
		{`{"id": "8", "type": "execute-snapshot", "data": {"data-collections": ["shop.(orders"]}}`, "is not a regular expression"},
		{`{"id": "9", "type": "execute-snapshot", "data": {"data-collections": ["shop.orders"], "additional-conditions": [{"data-collection": "crm.people", "filter": "id = 1"}]}}`, "matches none of the tables to read"},
		{`{"id": "10", "type": "resume-snapshot", "data": {"data-collections": ["nope"]}}`, `"nope" matches no table`},
		{`[1, 2]`, "not a JSON object"},
		{`{"id": "11", "type": "execute-snapshot"} {}`, "more than one JSON value"},
	} {
		_, err := signals.Parse([]byte(tc.value), tables)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line saying %s", tc.value, err, tc.want)
		}
	}
	// A filter that does not parse is refused without its literals: they
	// may be a masked column's values.
	for _, v := range []string{
		`{"id": "12", "type": "execute-snapshot", "data": {"data-collections": ["shop.orders"], "additional-condition": "email = 'ann@example.com' AND"}}`,
		`{"id": "13", "type": "execute-snapshot", "data": {"data-collections": ["shop.orders"], "additional-conditions": [{"data-collection": "shop.orders", "filter": "email = 'ann@example.com' OR OR id = 1"}]}}`,
	} {
		_, err := signals.Parse([]byte(v), tables)
		if err == nil || strings.Contains(err.Error(), "ann@example.com") {
			t.Errorf("%s: %v; want a refusal without the filter's literals", v, err)
		}
	}
}
