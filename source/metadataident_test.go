package source

import (
	"strings"
	"testing"
)

func TestMetadataIdent(t *testing.T) {
	tests := []struct{ given, location, want string }{
		{"", "file:///wh/shop.db/orders", "shop.orders"},
		{"", "s3://bucket/warehouse/shop.db/orders/", "shop.orders"},
		{"", "hdfs://nn:8020/wh/shop/orders", "shop.orders"},
		{"", "/wh/shop.db/orders", "shop.orders"},
		{"", "s3://bucket/orders", "default.orders"},
		{"", "orders", "default.orders"},
		{"sales.orders_v2", "file:///wh/shop.db/orders", "sales.orders_v2"},
		{"a.b.c", "file:///wh/shop.db/orders", "a.b.c"},
		{"renamed", "file:///wh/shop.db/orders", "shop.renamed"},
	}
	for _, tc := range tests {
		if got := strings.Join(metadataIdent(tc.given, tc.location), "."); got != tc.want {
			t.Errorf("metadataIdent(%q, %q) = %s, want %s", tc.given, tc.location, got, tc.want)
		}
	}
}
