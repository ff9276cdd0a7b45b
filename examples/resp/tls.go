package main

import (
	"crypto/tls"
	"errors"
	"fmt"
)

// errTLSFlags is -tls-cert without -tls-key, or the other way round.
var errTLSFlags = errors.New("resp: -tls-cert and -tls-key go together")

// loadTLS is the TLS configuration of -tls-cert and -tls-key (PEM files,
// as redis-server's tls-cert-file and tls-key-file): nil when neither is
// given, so the server speaks plain RESP. With them it serves TLS 1.2 and
// 1.3 on -addr, as redis-server does on its tls-port, so redis-cli --tls
// and redis-benchmark --tls talk to it.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, errTLSFlags
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("resp: load the TLS certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
