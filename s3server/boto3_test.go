package s3server_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sluice-data/sluice/internal/testenv"
	"github.com/sluice-data/sluice/s3server"
)

// boto3Python is a Python that imports boto3: the one on PATH, or
// Debian's (python3-boto3, which scripts/test installs when none has it).
func boto3Python(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import boto3").Run() == nil {
			return p
		}
	}
	testenv.Unavailable(t, "no python3 with boto3 (Debian: apt-get install python3-boto3)")
	return ""
}

// boto3Script puts an object with user metadata in two cases and returns
// the metadata HEAD and GET give back, as boto3 hands them to a program.
const boto3Script = `
import json, os, boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["TEST_ENDPOINT"], region_name=os.environ["TEST_REGION"],
    config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
s3.put_object(Bucket="bkt", Key="meta", Body=b"x", Metadata={"k": "v", "MixedCase": "Val"})
head = s3.head_object(Bucket="bkt", Key="meta")
get = s3.get_object(Bucket="bkt", Key="meta")
print(json.dumps({"head": head["Metadata"], "get": get["Metadata"], "body": get["Body"].read().decode()}))
`

// User metadata makes the round trip through boto3 with its keys in lower
// case, as from S3, over HTTP and over HTTPS with the generated CA given
// by AWS_CA_BUNDLE.
func TestBoto3Metadata(t *testing.T) {
	python := boto3Python(t)
	for _, tc := range []struct {
		name string
		opts s3server.Options
	}{{"http", s3server.Options{}}, {"https", s3server.Options{SelfSignedTLS: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			srv, err := s3server.Start(t.Context(), dir, "", tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			if err := srv.CreateBucket("bkt"); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(t.Context(), python, "-c", boto3Script)
			// Only the server's settings: none of the caller's AWS
			// configuration, no instance metadata service.
			none := filepath.Join(t.TempDir(), "none")
			cmd.Env = append(srv.Env(), "TEST_ENDPOINT="+srv.Endpoint, "TEST_REGION="+srv.Region,
				"AWS_CONFIG_FILE="+none, "AWS_SHARED_CREDENTIALS_FILE="+none, "AWS_EC2_METADATA_DISABLED=true",
				"PATH="+os.Getenv("PATH"), "HOME="+t.TempDir())
			out, err := cmd.Output()
			if err != nil {
				var stderr []byte
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = ee.Stderr
				}
				t.Fatalf("boto3: %v\n%s", err, stderr)
			}
			var got struct {
				Head, Get map[string]string
				Body      string
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("boto3 printed %q: %v", out, err)
			}
			want := map[string]string{"k": "v", "mixedcase": "Val"}
			for what, m := range map[string]map[string]string{"head_object": got.Head, "get_object": got.Get} {
				if len(m) != len(want) || m["k"] != "v" || m["mixedcase"] != "Val" {
					t.Errorf("boto3 %s metadata %v, want %v", what, m, want)
				}
			}
			if got.Body != "x" {
				t.Errorf("boto3 get_object body %q", got.Body)
			}
		})
	}
}
