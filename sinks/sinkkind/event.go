package sinkkind

import (
	"strconv"
	"strings"

	"github.com/icecdc/icecdc/cdc"
)

// DescribeEvent names an event for a refusal: its table, the snapshot's
// sequence number, its row id and its id ("table shop.orders, sequence
// number 7, row id 42, event <uuid>:7:42:c").
func DescribeEvent(t *cdc.TableInfo, seq int64, m *cdc.Message) string {
	row := "?"
	// The id is <table_uuid>:<seq>:<row_id>:<op> (cdc.EventID).
	if parts := strings.Split(m.ID, ":"); len(parts) >= 4 {
		row = parts[len(parts)-2]
	}
	return "table " + t.Namespace + "." + t.Name + ", sequence number " + strconv.FormatInt(seq, 10) + ", row id " + row + ", event " + m.ID
}
