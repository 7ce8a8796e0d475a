package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The vector of the Standard Webhooks reference libraries.
const (
	vectorID      = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTS      = 1614265330
	vectorBody    = `{"test": 2432232314}`
	vectorWantSig = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func vectorHeader(sig string) http.Header {
	h := http.Header{}
	h.Set(HeaderID, vectorID)
	h.Set(HeaderTimestamp, strconv.Itoa(vectorTS))
	h.Set(HeaderSignature, sig)
	return h
}

func TestSignStandardVector(t *testing.T) {
	got, err := Sign(testSecret, vectorID, time.Unix(vectorTS, 0), []byte(vectorBody))
	if err != nil {
		t.Fatal(err)
	}
	if got != vectorWantSig {
		t.Fatalf("Sign = %s, want %s", got, vectorWantSig)
	}
}

func TestVerify(t *testing.T) {
	at := time.Unix(vectorTS, 0)
	cases := []struct {
		name string
		h    http.Header
		body string
		now  time.Time
		ok   bool
	}{
		{"valid", vectorHeader(vectorWantSig), vectorBody, at, true},
		{"one of several signatures", vectorHeader("v1,AAAA v2,xyz " + vectorWantSig), vectorBody, at, true},
		{"tampered body", vectorHeader(vectorWantSig), `{"test": 2432232315}`, at, false},
		{"other id", func() http.Header { h := vectorHeader(vectorWantSig); h.Set(HeaderID, "msg_other"); return h }(), vectorBody, at, false},
		{"wrong version", vectorHeader("v1a," + vectorWantSig[3:]), vectorBody, at, false},
		{"missing signature", func() http.Header { h := vectorHeader(vectorWantSig); h.Del(HeaderSignature); return h }(), vectorBody, at, false},
		{"timestamp not a number", func() http.Header { h := vectorHeader(vectorWantSig); h.Set(HeaderTimestamp, "soon"); return h }(), vectorBody, at, false},
		{"too old", vectorHeader(vectorWantSig), vectorBody, at.Add(Tolerance + time.Second), false},
		{"too new", vectorHeader(vectorWantSig), vectorBody, at.Add(-Tolerance - time.Second), false},
		{"at the tolerance", vectorHeader(vectorWantSig), vectorBody, at.Add(Tolerance), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := verifyAt(testSecret, c.h, []byte(c.body), c.now)
			if c.ok && err != nil {
				t.Fatalf("verify: %v", err)
			}
			if !c.ok && !errors.Is(err, ErrVerification) {
				t.Fatalf("verify = %v, want ErrVerification", err)
			}
		})
	}
}

func TestSecretForms(t *testing.T) {
	// A raw secret is used byte for byte, as most webhook senders do.
	raw := "correct horse battery staple"
	m := hmac.New(sha256.New, []byte(raw))
	m.Write([]byte("id.42.body"))
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	got, err := Sign(raw, "id", time.Unix(42, 0), []byte("body"))
	if err != nil || got != want {
		t.Fatalf("raw secret: Sign = %q, %v; want %q", got, err, want)
	}
	// The whsec_ form of the same key signs the same.
	enc := "whsec_" + base64.StdEncoding.EncodeToString([]byte(raw))
	if got2, _ := Sign(enc, "id", time.Unix(42, 0), []byte("body")); got2 != want {
		t.Fatalf("whsec secret: Sign = %q, want %q", got2, want)
	}
	unpadded := "whsec_" + base64.RawStdEncoding.EncodeToString([]byte(raw))
	if got3, _ := Sign(unpadded, "id", time.Unix(42, 0), []byte("body")); got3 != want {
		t.Fatalf("unpadded whsec secret: Sign = %q, want %q", got3, want)
	}
	for _, bad := range []string{"", "whsec_", "whsec_!!not base64!!"} {
		if _, err := Sign(bad, "id", time.Unix(42, 0), nil); err == nil {
			t.Errorf("Sign with secret %q: no error", bad)
		}
		if _, err := New(Config{URL: "http://127.0.0.1/", Secret: bad}); err == nil {
			t.Errorf("New with secret %q: no error", bad)
		}
	}
}

// Standard Webhooks keys are 24 to 64 random bytes: a shorter key is
// refused in either form, and the error quotes neither the secret nor
// its key.
func TestSecretMinimumLength(t *testing.T) {
	key23 := []byte("0123456789abcdefghijklm")
	short := []string{"tiny-s3cret", string(key23), "whsec_" + base64.StdEncoding.EncodeToString(key23), "whsec_" + base64.RawStdEncoding.EncodeToString([]byte("k"))}
	for _, s := range short {
		err := CheckSecret(s)
		if err == nil {
			t.Errorf("CheckSecret(%q): no error", s)
			continue
		}
		if !strings.Contains(err.Error(), "24 bytes") || strings.Contains(err.Error(), s) || strings.Contains(err.Error(), "0123") {
			t.Errorf("CheckSecret(%q) = %v: want the minimum named and the secret not quoted", s, err)
		}
		if _, err := New(Config{URL: "http://127.0.0.1/", Secret: s}); err == nil || !strings.Contains(err.Error(), "webhook secret") {
			t.Errorf("New with secret %q: %v", s, err)
		}
	}
	key24 := append(key23, 'n')
	for _, s := range []string{string(key24), "whsec_" + base64.StdEncoding.EncodeToString(key24), testSecret} {
		if err := CheckSecret(s); err != nil {
			t.Errorf("CheckSecret(%q): %v", s, err)
		}
	}
}
