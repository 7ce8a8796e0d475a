package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of Standard Webhooks.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Tolerance is how far a webhook-timestamp may be from the receiver's clock
// for Verify to accept it, as in the Standard Webhooks libraries; it stops
// a captured request from being replayed later.
const Tolerance = 5 * time.Minute

// ErrVerification is wrapped by every error of Verify.
var ErrVerification = errors.New("webhook verification failed")

const secretPrefix = "whsec_"

// MinKeyBytes is the shortest HMAC key a secret may carry: Standard
// Webhooks secrets are "whsec_" and the base64 of 24 to 64 random bytes.
// A shorter key can be guessed offline from one signed request.
const MinKeyBytes = 24

// CheckSecret reports whether secret can sign requests as Config.Secret:
// non-empty, well-formed when "whsec_"-prefixed, and a key of at least
// MinKeyBytes. The error never quotes the secret.
func CheckSecret(secret string) error {
	_, err := parseSecret(secret)
	return err
}

// secretKey returns the HMAC key of a Config.Secret.
func secretKey(secret string) ([]byte, error) {
	key, err := parseSecret(secret)
	if err != nil {
		return nil, fmt.Errorf("webhook secret: %w", err)
	}
	return key, nil
}

func parseSecret(secret string) ([]byte, error) {
	if secret == "" {
		return nil, errors.New("required")
	}
	enc, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok {
		if len(secret) < MinKeyBytes {
			return nil, fmt.Errorf("shorter than %d bytes; use a random one, e.g. \"whsec_\" and the output of 'openssl rand -base64 32'", MinKeyBytes)
		}
		return []byte(secret), nil
	}
	// Standard Webhooks secrets are padded base64; accept unpadded too,
	// since some generators strip the padding.
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(enc)
	}
	if err != nil || len(key) == 0 {
		return nil, errors.New(`"whsec_" must be followed by the base64 of the key`)
	}
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("the key after \"whsec_\" decodes to fewer than %d bytes; use a random one, e.g. \"whsec_\" and the output of 'openssl rand -base64 32'", MinKeyBytes)
	}
	return key, nil
}

// signature returns "v1," + base64(HMAC-SHA256(key, id.timestamp.body)).
func signature(key []byte, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	var tsBuf [20]byte
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(tsBuf[:0], ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Sign returns the webhook-signature value for a request with the given
// webhook-id, webhook-timestamp and body, for a secret in Config.Secret's
// form.
func Sign(secret, id string, timestamp time.Time, body []byte) (string, error) {
	key, err := secretKey(secret)
	if err != nil {
		return "", err
	}
	return signature(key, id, timestamp.Unix(), body), nil
}

// Verify checks a received request the way a Standard Webhooks receiver
// does: the three headers are present, the timestamp is within Tolerance
// of now, and one of the space-separated "v1,<base64>" signatures matches
// the body. secret has Config.Secret's form. Errors wrap ErrVerification.
func Verify(secret string, h http.Header, body []byte) error {
	return verifyAt(secret, h, body, time.Now())
}

func verifyAt(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := secretKey(secret)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrVerification, err)
	}
	id, tsText, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return fmt.Errorf("%w: missing %s, %s or %s header", ErrVerification, HeaderID, HeaderTimestamp, HeaderSignature)
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s %q is not unix seconds", ErrVerification, HeaderTimestamp, tsText)
	}
	if skew := now.Sub(time.Unix(ts, 0)); skew > Tolerance || skew < -Tolerance {
		return fmt.Errorf("%w: %s is %s away from now", ErrVerification, HeaderTimestamp, skew.Round(time.Second))
	}
	want := []byte(signature(key, id, ts, body))
	for sig := range strings.FieldsSeq(sigs) {
		// hmac.Equal compares in constant time, so a forger learns
		// nothing from how long a rejection takes.
		if hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return fmt.Errorf("%w: no matching v1 signature", ErrVerification)
}
