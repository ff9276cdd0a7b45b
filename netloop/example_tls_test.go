package netloop_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math/big"
	"net"
	"time"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/socket"
)

// A TLS server: Config.TLS is all it takes. The handler (an echo) sees
// plaintext; a crypto/tls client talks to it.
func ExampleConfig_tls() {
	cert, roots := exampleCert()
	g, err := netloop.NewGroup(netloop.GroupConfig{Loops: 1})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	cfg := netloop.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}}
	ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, c *socket.TCPConn) {
		_, _ = netloop.Add(l, c, echo{}, cfg)
	})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- g.Run(ctx, nil) }()
	defer func() { stop(); <-ran }()

	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: roots})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("hello, TLS"))
	buf := make([]byte, 10)
	_, err = io.ReadFull(c, buf)
	fmt.Printf("%s %q %v\n", tls.VersionName(c.ConnectionState().Version), buf, err)
	// Output:
	// TLS 1.3 "hello, TLS" <nil>
}

// exampleCert makes a self-signed certificate for 127.0.0.1 and a pool
// that trusts it.
func exampleCert() (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots
}
