package netloop

import (
	"crypto/tls"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// SNI with GetConfigForClient: the server's configuration has no
// certificate of its own and picks a whole configuration by the name the
// client asks for, each with its certificate and its ALPN protocols.
// Clients that offer the same protocols get, per name, that name's
// certificate and protocol, and the handler sees what was agreed; a name
// the server does not know ends that handshake alone, and the server
// goes on.
func TestTLSGetConfigForClient(t *testing.T) {
	rig := newTLSRig(t)
	byName := map[string]*tls.Config{
		"a.test": {Certificates: []tls.Certificate{rig.ca.Issue(t, "a.test")}, NextProtos: []string{"proto-a"}},
		"b.test": {Certificates: []tls.Certificate{rig.ca.Issue(t, "b.test")}, NextProtos: []string{"proto-b"}},
	}
	cfg := &tls.Config{GetConfigForClient: func(hi *tls.ClientHelloInfo) (*tls.Config, error) {
		if c, ok := byName[hi.ServerName]; ok {
			return c, nil
		}
		return nil, fmt.Errorf("no configuration for %q", hi.ServerName)
	}}
	addr, hs := serveEcho(t, cfg)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			// The same client twice, the name aside: b.test first, so
			// that neither answer can be the first configuration's alone.
			for _, name := range []string{"b.test", "a.test", "b.test"} {
				cc := rig.clientConfig(v)
				cc.ServerName = name
				cc.NextProtos = []string{"proto-a", "proto-b"}
				c := dialTLS(t, addr, cc)
				want := "proto-" + name[:1]
				st := c.ConnectionState()
				require.Equal(t, name, st.PeerCertificates[0].Subject.CommonName)
				require.Equal(t, want, st.NegotiatedProtocol)
				srv := <-(<-hs).states
				require.Equal(t, name, srv.ServerName)
				require.Equal(t, want, srv.NegotiatedProtocol)
				roundTrip(t, c, "sni "+name)
				require.NoError(t, c.Close())
			}

			cc := rig.clientConfig(v)
			cc.ServerName = "c.test"
			_, err := tls.Dial("tcp", addr, cc)
			require.Error(t, err, "a name the server has no configuration for")
			err = waitErr(t, (<-hs).closed)
			require.ErrorContains(t, err, "tls handshake")
			require.ErrorContains(t, err, `no configuration for "c.test"`)

			cc = rig.clientConfig(v)
			cc.ServerName = "a.test"
			roundTrip(t, dialTLS(t, addr, cc), "still served")
			<-hs
		})
	}
}
