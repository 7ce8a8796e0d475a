package cdc

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAppendValueWithID: the event id becomes the last member of the
// envelope or row a JSON value is, inside payload in Connect's form;
// other values pass unchanged.
func TestAppendValueWithID(t *testing.T) {
	id := EventID("9b2f-uuid", 7, 42, OpUpdate)
	const member = `"__event_id":"9b2f-uuid:7:42:u"`
	for _, tc := range []struct {
		connect     bool
		value, want string
	}{
		{false, `{"before":null,"after":{"a":1},"op":"c"}`, `{"before":null,"after":{"a":1},"op":"c",` + member + `}`},
		{false, `{}`, `{` + member + `}`},
		{false, "{ }\n", `{ ` + member + `}`},
		{false, `{"a":"}"} `, `{"a":"}",` + member + `}`},
		{false, `null`, `null`},
		{false, `[1,2]`, `[1,2]`},
		{false, "\x00\x00\x00\x00\x01{", "\x00\x00\x00\x00\x01{"},
		{false, ``, ``},
		{true, `{"schema":{"type":"struct"},"payload":{"op":"c"}}`, `{"schema":{"type":"struct"},"payload":{"op":"c",` + member + `}}`},
		{true, `{"schema":{"type":"struct"},"payload":{}}`, `{"schema":{"type":"struct"},"payload":{` + member + `}}`},
		{true, `{"schema":{"type":"struct"},"payload":null}`, `{"schema":{"type":"struct"},"payload":null}`},
		{true, `null`, `null`},
	} {
		m := Message{ID: id, Value: []byte(tc.value)}
		got := Encoding{ValuePayload: tc.connect}.AppendValueWithID([]byte("prefix"), &m)
		if string(got) != "prefix"+tc.want {
			t.Errorf("%q: got %q, want %q", tc.value, got[6:], tc.want)
		}
		if strings.Contains(tc.want, member) && !json.Valid(got[6:]) {
			t.Errorf("%q: %s is not JSON", tc.value, got[6:])
		}
	}
	// An id JSON would need escaped stays a valid string.
	m := Message{ID: "a\"b\\c\n", Value: []byte(`{}`)}
	var v map[string]string
	if err := json.Unmarshal(Encoding{}.AppendValueWithID(nil, &m), &v); err != nil || v[EventIDField] != m.ID {
		t.Errorf("escaped id: %v, %q", err, v)
	}
}
