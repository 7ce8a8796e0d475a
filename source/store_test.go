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

func TestStoreProps(t *testing.T) {
	unsetEnv(t, "AWS_ENDPOINT_URL")
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://minio:9000")
	p := storeProps(Options{Props: map[string]string{"s3.path-style-access": "false"}})
	if p["s3.force-virtual-addressing"] != "true" || p["s3.endpoint"] != "http://minio:9000" {
		t.Fatalf("props %v", p)
	}
	// Explicit properties win over the environment and the aliases.
	p = storeProps(Options{Props: map[string]string{"s3.path-style-access": "false", "s3.force-virtual-addressing": "false", "s3.endpoint": "http://x"}})
	if p["s3.force-virtual-addressing"] != "false" || p["s3.endpoint"] != "http://x" {
		t.Fatalf("props %v", p)
	}
	// A glue catalog's credentials and region serve S3 unless s3.* sets them.
	p = storeProps(Options{CatalogType: "glue", Props: map[string]string{
		"glue.access-key-id": "AK", "glue.secret-access-key": "SK", "glue.region": "eu-west-1"}})
	if p["s3.access-key-id"] != "AK" || p["s3.secret-access-key"] != "SK" || p["s3.region"] != "eu-west-1" {
		t.Fatalf("props %v", p)
	}
	p = storeProps(Options{CatalogType: "glue", Props: map[string]string{
		"glue.access-key-id": "AK", "glue.secret-access-key": "SK", "s3.access-key-id": "AK3", "s3.secret-access-key": "SK3"}})
	if p["s3.access-key-id"] != "AK3" || p["s3.secret-access-key"] != "SK3" {
		t.Fatalf("props %v", p)
	}
}

func TestSecretsAreHidden(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret-Kq3")
	s := newSecrets(Options{
		CatalogURI: "postgres://icecdc:uri-pass-Wd9@db/catalog",
		Props: map[string]string{
			"s3.secret-access-key":                  "s3-secret-Pz7",
			"credential":                            "client-id-Mm1:client-secret-Jj4",
			"adls.sas-token.acct.blob.core.windows": "sv=2024&sig=sas-Yy5",
			"gcs.oauth2.token-expires-at":           "1767225600000",
			"s3.region":                             "us-east-1",
		},
	})
	msg := "failed: s3-secret-Pz7 client-id-Mm1:client-secret-Jj4 client-secret-Jj4 uri-pass-Wd9 sv=2024&sig=sas-Yy5 env-secret-Kq3 us-east-1 1767225600000"
	got := s.hide(msg)
	for _, secret := range []string{"s3-secret-Pz7", "client-secret-Jj4", "client-id-Mm1", "uri-pass-Wd9", "sas-Yy5", "env-secret-Kq3"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q shows %q", got, secret)
		}
	}
	for _, kept := range []string{"us-east-1", "1767225600000"} {
		if !strings.Contains(got, kept) {
			t.Errorf("%q lost %q, which is no secret", got, kept)
		}
	}
}

func TestCheckProps(t *testing.T) {
	if err := CheckProps(map[string]string{"s3.path-style-access": "true", "s3.request-timeout": "2.5", "s3.connect-timeout": "5s"}); err != nil {
		t.Fatal(err)
	}
	err := CheckProps(map[string]string{"s3.path-style-access": "on", "s3.request-timeout": "-1s"})
	if err == nil || !strings.Contains(err.Error(), "s3.path-style-access") || !strings.Contains(err.Error(), "s3.request-timeout") {
		t.Fatalf("got %v", err)
	}
}
