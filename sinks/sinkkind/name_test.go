package sinkkind

import (
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
)

func TestNameTemplate(t *testing.T) {
	tbl := &cdc.TableInfo{Catalog: "lake", Namespace: "shop", Name: "orders"}
	if got := ExpandName("{pipeline}.{catalog}.{namespace}.{table}", tbl, "p"); got != "p.lake.shop.orders" {
		t.Errorf("ExpandName = %q", got)
	}
	if err := CheckNameTemplate("{namespace}-{table}", ""); err != nil {
		t.Errorf("a good template: %v", err)
	}
	if err := CheckNameTemplate("{pipeline}-{table}", ""); err == nil || !strings.Contains(err.Error(), "no name") {
		t.Errorf("{pipeline} without a name: %v", err)
	}
	if err := CheckNameTemplate("x-{tabel}", "p"); err == nil || err.Error() != `unknown placeholder {tabel} in "x-{tabel}"` {
		t.Errorf("unknown placeholder: %v", err)
	}
}

func TestDescribeEvent(t *testing.T) {
	tbl := &cdc.TableInfo{Namespace: "shop", Name: "orders"}
	m := &cdc.Message{ID: cdc.EventID("u-1", 7, 42, cdc.OpCreate)}
	want := "table shop.orders, sequence number 7, row id 42, event u-1:7:42:c"
	if got := DescribeEvent(tbl, 7, m); got != want {
		t.Errorf("DescribeEvent = %q, want %q", got, want)
	}
}
