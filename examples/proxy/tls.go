//go:build unix

package main

import (
	"crypto/tls"
	"errors"
	"fmt"
)

// errTLSFlags is -tls-cert without -tls-key, or the other way round.
var errTLSFlags = errors.New("proxy: -tls-cert and -tls-key go together")

// loadTLS is the TLS configuration of -tls-cert and -tls-key (PEM
// files): nil when neither is given. With them the proxy terminates TLS:
// its clients speak TLS to it (netloop's Config.TLS on their Conns), and
// the backend gets the plaintext over a plain connection. The bytes then
// pass through the handlers (-mode copy): a relay would splice
// ciphertext.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, errTLSFlags
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("proxy: load the TLS certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
