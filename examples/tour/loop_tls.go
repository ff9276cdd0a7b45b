package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/big"
	"net"
	"time"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
)

// tlsStop is the Loop tour's TLS: netloop.Dial with Config.TLS set is a
// crypto/tls client on the Loop. A crypto/tls server (package net's,
// with a certificate made here for 127.0.0.1) greets it and closes; done
// runs once the handshake is done, and the handler hears plaintext. Only
// the handshake ran in a goroutine (netloop's bounded pool); the
// connection then has none.
func tlsStop(l *eventloop.Loop, heard func(l *eventloop.Loop, kind, what string), say sayFunc) (stop func(), err error) {
	cert, pool, err := selfSigned()
	if err != nil {
		return nil, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		return nil, err
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write([]byte("hello over TLS"))
		_ = c.Close() // sends close_notify
	}()
	h := netloop.HandlerFunc(func(c *netloop.Conn, in []byte) int {
		heard(c.Loop(), "TLS", fmt.Sprintf("read %q", in))
		return len(in)
	})
	cfg := netloop.Config{TLS: &tls.Config{RootCAs: pool}} // ServerName: the address's host
	err = netloop.Dial(context.Background(), l, "tcp", ln.Addr().String(), h, cfg, func(c *netloop.Conn, err error) {
		if err != nil {
			say("  TLS dial failed: %v", err)
			return
		}
		st, _ := c.ConnectionState()
		say("  TLS: handshake done, %s", tls.VersionName(st.Version))
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	say("Dialed a TLS server from the Loop (netloop.Dial with Config.TLS).")
	return func() { _ = ln.Close(); <-served }, nil
}

// selfSigned makes a certificate for 127.0.0.1 (ECDSA P-256, an hour),
// and a pool that trusts it.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}
