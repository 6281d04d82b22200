package s3server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"time"
)

// certLifetime is how long a generated certificate is valid: a server
// makes new ones at every start.
const certLifetime = 365 * 24 * time.Hour

// selfSigned makes a CA and a server certificate it signs for the names a
// client may reach addr by, and returns the server's TLS configuration
// and the CA in PEM. Two certificates rather than one self-signed leaf:
// strict verifiers (Python's from 3.13) refuse a leaf that is its own CA.
// The CA's key is dropped once it has signed: nothing else can be signed
// with it.
func selfSigned(addr *net.TCPAddr) (*tls.Config, []byte, error) {
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	dns := []string{"localhost"}
	switch {
	case addr.IP == nil || addr.IP.IsUnspecified():
		// Every interface: the names and addresses others know it by.
		if h, err := os.Hostname(); err == nil && h != "" && h != "localhost" {
			dns = append(dns, h)
		}
		if as, err := net.InterfaceAddrs(); err == nil {
			for _, a := range as {
				if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
					ips = append(ips, n.IP)
				}
			}
		}
	case !addr.IP.IsLoopback():
		ips = append(ips, addr.IP)
	}

	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	ca := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"sluice"}, CommonName: "sluice serve-s3 CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		SubjectKeyId:          keyID(&caKey.PublicKey),
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"sluice"}, CommonName: "sluice serve-s3"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLifetime),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:              dns,
		IPAddresses:           ips,
		SubjectKeyId:          keyID(&key.PublicKey),
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	conf := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	return conf, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// keyID is RFC 5280's method 1: the SHA-1 of the public key's bits.
func keyID(pub *ecdsa.PublicKey) []byte {
	b, _ := pub.Bytes()
	sum := sha1.Sum(b)
	return sum[:]
}
