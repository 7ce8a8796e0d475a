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
