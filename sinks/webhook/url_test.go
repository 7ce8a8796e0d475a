package webhook

import (
	"strings"
	"testing"
)

// TestURLPasswordHidden: a webhook URL that does not parse (a % in its
// password) is refused without the password, its query or url.Parse's
// quote of the URL.
func TestURLPasswordHidden(t *testing.T) {
	_, err := New(Config{URL: "https://hook:Pw-%zz-Qr4@hooks.example/in?token=Tk-9", Secret: testSecret})
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	if strings.Contains(msg, "Pw-") || strings.Contains(msg, "zz") || strings.Contains(msg, "Tk-9") ||
		!strings.Contains(msg, "webhook url https://hook:xxxxx@hooks.example/in") {
		t.Fatalf("want the URL without its password or query: %s", msg)
	}
}
