package source

import (
	"fmt"
	"io/fs"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// TestAnsweredNotFound: an S3 operation that failed without an answer (a
// timeout whose text holds "301", which gocloud's s3blob takes for a
// missing bucket) is no missing object; one answered NoSuchKey is, and so
// is a not-found of another store.
func TestAnsweredNotFound(t *testing.T) {
	timeout := &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject",
		Err: fmt.Errorf("https response error: read tcp 127.0.0.1:43012->127.0.0.1:34301: %w", &awshttp.ResponseTimeoutError{TimeoutDur: 500 * time.Millisecond})}
	answered := &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject",
		Err: &smithy.GenericAPIError{Code: "NoSuchKey", Message: "The specified key does not exist."}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"timeout holding 301", fmt.Errorf("blob (code=NotFound): %w: %w", timeout, fs.ErrNotExist), false},
		{"NoSuchKey", fmt.Errorf("blob (code=NotFound): %w: %w", answered, fs.ErrNotExist), true},
		{"another store", fmt.Errorf("storage: object doesn't exist: %w", fs.ErrNotExist), true},
	} {
		if got := answeredNotFound(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
