package source

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// unsetEnv removes k from the environment for the test's duration.
func unsetEnv(t *testing.T, k string) {
	t.Setenv(k, "")
	os.Unsetenv(k)
}

// openFails opens the table at metadata with props and wants an error
// holding every part, within a few seconds (no network wait).
func openFails(t *testing.T, metadata string, props map[string]string, parts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := Open(ctx, Options{MetadataPath: metadata, Props: props})
	t.Logf("%s in %s: %v", metadata, time.Since(start).Round(time.Millisecond), err)
	if err == nil {
		t.Fatal("opened")
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error lacks %q: %v", p, err)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error spans lines: %q", err)
	}
}

func TestGCSWithoutCredentials(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home) // no gcloud application-default credentials
	t.Setenv("CLOUDSDK_CONFIG", home)
	unsetEnv(t, "GOOGLE_APPLICATION_CREDENTIALS")
	unsetEnv(t, "GCE_METADATA_HOST")
	openFails(t, "gs://lake/wh/t/metadata/v1.metadata.json", nil,
		"load metadata gs://lake/wh/t/metadata/v1.metadata.json: gcs bucket lake: no credentials: set gcs.oauth2.token, gcs.jsonkey or gcs.keypath",
		"GOOGLE_APPLICATION_CREDENTIALS")
}

func TestAzureWithoutCredentials(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PATH", home) // no az or azd command
	for _, k := range []string{"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_USERNAME", "AZURE_TOKEN_CREDENTIALS", "IDENTITY_ENDPOINT", "MSI_ENDPOINT"} {
		unsetEnv(t, k)
	}
	loc := "abfs://lake@acct.dfs.core.windows.net/wh/t/metadata/v1.metadata.json"
	openFails(t, loc, nil, "load metadata "+loc, "azure container lake of acct.dfs.core.windows.net: no credentials: set adls.auth.shared-key.account.name")
	// A shared key needs both halves; iceberg-go names them.
	openFails(t, loc, map[string]string{"adls.auth.shared-key.account.name": "acct"},
		"load metadata "+loc, "adls.auth.shared-key.account.key")
}
