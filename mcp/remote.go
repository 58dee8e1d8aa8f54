package mcp

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
)

// remoteClient opens an MCP client to a streamable-HTTP or SSE spec. Its
// HTTP traffic goes through status, so a failure can be told to be an
// auth failure: mcp-go reports a 401 as "authorization required" and a 403
// on initialize as a "legacy SSE server", naming neither.
func remoteClient(spec Spec, headers func(context.Context) map[string]string, status *lastStatus) (*client.Client, error) {
	hc := &http.Client{Transport: status}
	var rc *client.Client
	var err error
	if spec.Transport == TransportSSE {
		rc, err = client.NewSSEMCPClient(spec.URL, client.WithHeaderFunc(headers), transport.WithHTTPClient(hc))
	} else {
		rc, err = client.NewStreamableHttpClient(spec.URL, transport.WithHTTPHeaderFunc(headers), transport.WithHTTPBasicClient(hc))
	}
	if err != nil {
		return nil, err
	}
	return client.NewClient(rc.GetTransport(), client.WithLegacyProtocolOnly()), nil
}

// lastStatus is an http.RoundTripper that remembers the last error status
// it saw.
type lastStatus struct{ code atomic.Int64 }

func (l *lastStatus) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && resp.StatusCode >= 400 {
		l.code.Store(int64(resp.StatusCode))
	}
	return resp, err
}

// authFailure returns an error wrapping ErrAuthFailed if the server last
// answered 401 or 403, and nil otherwise.
func (l *lastStatus) authFailure(url string) error {
	if code := l.code.Load(); code == http.StatusUnauthorized || code == http.StatusForbidden {
		return fmt.Errorf("%w: HTTP %d from %s", ErrAuthFailed, code, url)
	}
	return nil
}
