package store

import (
	"crypto/tls"
	"crypto/x509"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// useCABundle gives tr the CA certificates of AWS_CA_BUNDLE or the shared
// config's ca_bundle. The SDK's configuration loader reads and parses them
// (the aws CLI's rules: the environment first, then the profile) into the
// HTTP client it builds; the driver uses its own tuned transport instead,
// so it takes the loader's root CAs over from there.
func useCABundle(tr *Transport, cfg aws.Config) error {
	bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient)
	if !ok {
		return nil
	}
	tc := bc.GetTransport().TLSClientConfig
	if tc == nil || tc.RootCAs == nil {
		return nil
	}
	if tr.base.TLSClientConfig == nil {
		tr.base.TLSClientConfig = &tls.Config{}
	}
	tr.base.TLSClientConfig.RootCAs = tc.RootCAs
	return nil
}

// untrustedCert reports whether err is a server certificate that no
// trusted CA signed.
func untrustedCert(err error) bool {
	var ua x509.UnknownAuthorityError
	var cv *tls.CertificateVerificationError
	return errors.As(err, &ua) || errors.As(err, &cv)
}
