package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"debezium-json", "connect-json", "debezium-avro", "table"}
	for _, c := range []struct{ in, want string }{
		{"debezium-jsn", "debezium-json"},
		{"tabel", "table"},
		{"TABLE", "table"},
		{"avro", ""},  // 9 edits from the nearest
		{"x", ""},     // too short to be a typo of anything here
		{"ordrs", ""}, // nothing near
		{"", ""},
	} {
		if got := Closest(c.in, names); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Closest("bookshop.ordrs", []string{"bookshop.customers", "bookshop.orders"}); got != "bookshop.orders" {
		t.Errorf("Closest(bookshop.ordrs) = %q", got)
	}
	if got := Closest("a", nil); got != "" {
		t.Errorf("Closest with no names = %q", got)
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"ordrs", "orders", 1}, {"tabel", "table", 2}} {
		if got := Distance(c.a, c.b); got != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
