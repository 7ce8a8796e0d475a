package redact

import (
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://user:p%zz@catalog.example/v1", "https://user:xxxxx@catalog.example/v1"},
		{"http://u:pa@ss@h:8181", "http://u:xxxxx@h:8181"},
		{"https://TOKEN@h/x@y", "https://xxxxx@h/x@y"},
		{"https://h/path@x", "https://h/path@x"},
		{"http://proxy:3128", "http://proxy:3128"},
		{"not a url", "not a url"},
		{"abc://@h", "abc://@h"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestText(t *testing.T) {
	msg := `parse "http://u:s3cr%t@h:1/v1": invalid URL escape "%t@"; also https://tok@x/y and s3://b/k@v, "abfss://box@acct.dfs.core.windows.net/t"`
	got := Text(msg)
	for _, s := range []string{"s3cr", "tok@"} {
		if strings.Contains(got, s) {
			t.Errorf("Text kept %q: %s", s, got)
		}
	}
	if !strings.Contains(got, "s3://b/k@v") || !strings.Contains(got, "abfss://box@acct") || !strings.Contains(got, "http://u:xxxxx@h:1/v1") {
		t.Errorf("Text changed what is no userinfo: %s", got)
	}
}

func TestUserinfo(t *testing.T) {
	got := Userinfo("http://u:p%40ss@h")
	if len(got) != 2 || got[0] != "p%40ss" || got[1] != "p@ss" {
		t.Errorf("Userinfo = %q", got)
	}
	if Userinfo("http://h/x") != nil {
		t.Error("Userinfo of a URL without one")
	}
}

func TestParseReason(t *testing.T) {
	for in, want := range map[string]string{
		"http://u:p%zz@h":    "a % not followed",
		"http://h:port/":     "a port",
		"http://u:p@h\x7f/x": "a control character",
	} {
		_, err := url.Parse(in)
		if err == nil {
			t.Fatalf("%q parsed", in)
		}
		if got := ParseReason(err); !strings.HasPrefix(got, want) || strings.Contains(got, "zz") {
			t.Errorf("ParseReason(%q) = %q, want %q…", in, got, want)
		}
	}
}

// TestCredentials: what a server echoing the request's headers, or a
// proxy's page, may quote of the credentials is hidden; the rest stays.
func TestCredentials(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Authorization: Basic aWNlY2RjOlB3LVFyNA==", "Authorization: xxxxx"},
		{`{"headers":{"Authorization":["Bearer Tk-9x.abc"],"Accept":["*/*"]}}`, `{"headers":{"Authorization":["xxxxx"],"Accept":["*/*"]}}`},
		{`{"error_code":40101,"message":"bad password=Pw-Qr4 for icecdc"}`, `{"error_code":40101,"message":"bad password=xxxxx for icecdc"}`},
		{`{"password": "a b\"c", "user": "icecdc"}`, `{"password": "xxxxx", "user": "icecdc"}`},
		{"login?user=a&client_secret=s3&x=1", "login?user=a&client_secret=xxxxx&x=1"},
		{"sent bearer abcdefgh12345 to http://u:pw@h/x", "sent bearer xxxxx to http://u:xxxxx@h/x"},
		{"api-key: 123456", "api-key: xxxxx"},
		{"Subject 't-key' not found.", "Subject 't-key' not found."},
		{"basic auth failed", "basic auth failed"},
		{"<html><title>502 Bad Gateway</title></html>", "<html><title>502 Bad Gateway</title></html>"},
	} {
		if got := Credentials(c.in); got != c.want {
			t.Errorf("Credentials(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}
