package main

import (
	"strings"
	"testing"
)

// TestAllowedLocations: the config field is parsed, and --allowed-location
// confines what `changes` reads.
func TestAllowedLocations(t *testing.T) {
	raw := strings.Replace(goodConfig, "poll:", "allowed_locations: [file:///var/lib/icecdc/warehouse, s3://lake/tables]\npoll:", 1)
	c, err := parseConfig([]byte(raw), env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.AllowedLocations, " ") != "file:///var/lib/icecdc/warehouse s3://lake/tables" {
		t.Fatalf("allowed_locations: %q", c.AllowedLocations)
	}

	dir, catArgs, _ := bookshop(t)
	failsWith(t, append(catArgs, "--allowed-location", "file:///elsewhere", "--allowed-location", dir+"/warehouse-not"),
		"outside the allowed locations (allowed_locations file:///elsewhere, allowed_locations "+dir+"/warehouse-not)")
	if out, errOut, code := runCmd(append(append([]string{"changes"}, catArgs...), "--allowed-location", dir)...); code != 0 || out == "" {
		t.Fatalf("allowed: exit %d, stderr %q", code, errOut)
	}
}
