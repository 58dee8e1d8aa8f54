package handlers

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"patchbay"
	"patchbay/db"
	"patchbay/db/seal"
	"patchbay/handlers/devidp"
	"patchbay/mcp"
	"patchbay/mcp/connectors"
)

// The development people, by subject.
const (
	ada = "dev-admin"
	uma = "dev-user"
	sam = "dev-support"
)

// testSessions is the session policy every test server uses.
var testSessions = db.SessionPolicy{Idle: time.Hour, MaxAge: 12 * time.Hour}

// serverOpts adjusts a test server. The zero value is the production
// wiring with a rate limit loose enough never to trip by accident.
type serverOpts struct {
	// People are offered by the development identity provider; nil means
	// devidp.DefaultPeople(), as in production.
	People []devidp.Person
	// SignInBurst and SignInRate bound sign-in attempts per IP. Zero means
	// 1000 a millisecond: every sign-in spends three tokens (login,
	// picker, callback), and most tests sign in several people.
	SignInBurst    int
	SignInRate     time.Duration
	TrustedProxies []*net.IPNet
	// PipArgs are the connector runtimes' extra pip arguments, such as
	// installtest.OfflinePipArgs for the Python test connector.
	PipArgs []string
}

// testServer is a real Patchbay HTTP server on a loopback port with a real
// SQLite database and the real development OpenID Provider.
type testServer struct {
	srv  *Server
	URL  string
	base *url.URL
	db   *db.DB
	// rt runs connectors for real: processes, installs and jobs, with its
	// data directory in a temporary directory.
	rt     *connectors.Runtimes
	log    *slog.Logger
	logs   *logBuffer
	oidc   OIDCConfig // the development provider's client registration
	people []devidp.Person
	rec    *transcript
	tr     http.RoundTripper
}

// logBuffer collects log output from concurrent requests.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// swapHandler lets the httptest server start before Patchbay exists:
// Patchbay's BaseURL, issuer and redirect URL all need the server's URL.
type swapHandler struct{ h atomic.Pointer[Server] }

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := s.h.Load()
	if h == nil {
		http.Error(w, "not started", http.StatusServiceUnavailable)
		return
	}
	h.ServeHTTP(w, r)
}

func newTestServer(t *testing.T, opts serverOpts) *testServer {
	t.Helper()
	ctx := context.Background()
	key, err := seal.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	d, err := db.Open(ctx, filepath.Join(t.TempDir(), "patchbay.db"), seal.NewKeyring(key))
	if err != nil {
		t.Fatalf("open db: %v", err)
	}
	t.Cleanup(func() { d.Close() })

	sw := &swapHandler{}
	hs := httptest.NewServer(sw)
	t.Cleanup(hs.Close)
	base, err := url.Parse(hs.URL)
	if err != nil {
		t.Fatal(err)
	}

	logs := &logBuffer{}
	log := slog.New(patchbay.NewRedactingHandler(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))

	oidcCfg := OIDCConfig{RedirectURL: base.JoinPath("/auth/callback").String()}
	people := opts.People
	if people == nil {
		people = devidp.DefaultPeople()
	}
	idp, admins, err := DevSignIn(context.Background(), d, base, &oidcCfg, people)
	if err != nil {
		t.Fatalf("dev sign-in: %v", err)
	}

	rt := connectors.New(connectors.Config{
		DB:      d,
		DataDir: t.TempDir(),
		PipArgs: opts.PipArgs,
		Log:     log,
		Manager: mcp.Options{
			ConnectTimeout: 20 * time.Second,
			BackoffBase:    50 * time.Millisecond,
			BackoffMax:     500 * time.Millisecond,
			StopGrace:      500 * time.Millisecond,
		},
		JobTimeout: 2 * time.Minute,
	})
	if err := rt.Start(ctx); err != nil {
		t.Fatalf("start connector runtimes: %v", err)
	}
	// Registered after the database's cleanup, so it runs first: every
	// job records its run before the database closes.
	t.Cleanup(func() { rt.Close() })

	if opts.SignInRate == 0 {
		opts.SignInRate = time.Millisecond
	}
	if opts.SignInBurst == 0 {
		opts.SignInBurst = 1000
	}
	s := New(Deps{
		DB:             d,
		Connectors:     rt,
		Log:            log,
		BaseURL:        base,
		AdminEmails:    admins,
		Sessions:       testSessions,
		Auth:           NewAuthenticator(oidcCfg),
		DevIDP:         idp,
		TrustedProxies: opts.TrustedProxies,
		SignInRate:     opts.SignInRate,
		SignInBurst:    opts.SignInBurst,
		Version:        "test",
	})
	sw.h.Store(s)
	return &testServer{
		srv: s, URL: hs.URL, base: base, db: d, rt: rt, log: log, logs: logs, oidc: oidcCfg,
		people: people, rec: &transcript{}, tr: hs.Client().Transport,
	}
}

// person returns the development person with the given subject.
func (ts *testServer) person(t *testing.T, subject string) devidp.Person {
	t.Helper()
	for _, p := range ts.people {
		if p.Subject == subject {
			return p
		}
	}
	t.Fatalf("no development person %q", subject)
	return devidp.Person{}
}

// user returns the stored user for a development person who has signed in
// (or, for support people, been pre-added).
func (ts *testServer) user(t *testing.T, subject string) patchbay.User {
	t.Helper()
	u, err := ts.db.UserByEmail(context.Background(), strings.ToLower(ts.person(t, subject).Email))
	if err != nil {
		t.Fatalf("user %s: %v", subject, err)
	}
	return u
}

// transcript records every response any test client received, headers
// and body, so a test can search everything that left the server.
type transcript struct {
	mu      sync.Mutex
	entries []exchange
}

type exchange struct {
	method, url string
	status      int
	header      http.Header
	body        string
}

func (tr *transcript) add(e exchange) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.entries = append(tr.entries, e)
}

func (tr *transcript) all() []exchange {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]exchange(nil), tr.entries...)
}

type recordingTransport struct {
	next http.RoundTripper
	rec  *transcript
}

func (rt recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := rt.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	rt.rec.add(exchange{method: r.Method, url: r.URL.String(), status: resp.StatusCode, header: resp.Header.Clone(), body: string(body)})
	return resp, nil
}

// client is one browser: a cookie jar and, once signed in, its CSRF token
// and session cookie value. It never follows redirects by itself, so that
// tests see every hop.
type client struct {
	ts      *testServer
	hc      *http.Client
	jar     *cookiejar.Jar
	csrf    string
	session string
}

func (ts *testServer) newClient(t *testing.T) *client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{
		Jar:           jar,
		Transport:     recordingTransport{next: ts.tr, rec: ts.rec},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}
	return &client{ts: ts, hc: hc, jar: jar}
}

// response is a response with its body read.
type response struct {
	status int
	header http.Header
	body   string
	url    *url.URL
}

// location returns the redirect target resolved against the request URL.
func (r response) location(t *testing.T) string {
	t.Helper()
	loc := r.header.Get("Location")
	if loc == "" {
		t.Fatalf("%s: no Location header (status %d)", r.url, r.status)
	}
	u, err := r.url.Parse(loc)
	if err != nil {
		t.Fatalf("%s: bad Location %q: %v", r.url, loc, err)
	}
	return u.String()
}

func (r response) doc(t *testing.T) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(r.body))
	if err != nil {
		t.Fatalf("%s: parse HTML: %v", r.url, err)
	}
	return doc
}

// cookie returns the Set-Cookie named name, or nil.
func (r response) cookie(name string) *http.Cookie {
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// apiError decodes a JSON error body.
func (r response) apiError(t *testing.T) apiErrorBody {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s: Content-Type %q; want application/json (status %d, body %.200q)", r.url, ct, r.status, r.body)
	}
	var e apiError
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatalf("%s: decode JSON error %q: %v", r.url, r.body, err)
	}
	return e.Error
}

// hdr builds request headers from key, value pairs.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

var (
	htmxReq = hdr("HX-Request", "true")
	jsonReq = hdr("Accept", "application/json")
)

// abs turns a path into a URL on the test server; absolute URLs pass.
func (ts *testServer) abs(path string) string {
	if strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") {
		return path
	}
	return ts.URL + path
}

// do sends one request. A non-nil form is sent as the urlencoded body.
func (c *client) do(t *testing.T, method, path string, form url.Values, h http.Header) response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.ts.abs(path), body)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, vs := range h {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b), url: req.URL}
}

func (c *client) get(t *testing.T, path string, h ...http.Header) response {
	t.Helper()
	return c.do(t, http.MethodGet, path, nil, merge(h...))
}

func (c *client) post(t *testing.T, path string, form url.Values, h ...http.Header) response {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	return c.do(t, http.MethodPost, path, form, merge(h...))
}

// formPost posts a form the way a browser without JavaScript does, with
// the CSRF token in the csrf_token field.
func (c *client) formPost(t *testing.T, path string, form url.Values, h ...http.Header) response {
	t.Helper()
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	f.Set(csrfField, c.csrf)
	return c.post(t, path, f, h...)
}

// htmxPost posts the way htmx does, with the token from <body hx-headers>.
func (c *client) htmxPost(t *testing.T, path string, form url.Values, h ...http.Header) response {
	t.Helper()
	return c.post(t, path, form, append(h, htmxReq, hdr(csrfHeader, c.csrf))...)
}

func merge(hs ...http.Header) http.Header {
	out := http.Header{}
	for _, h := range hs {
		for k, vs := range h {
			out[k] = append(out[k], vs...)
		}
	}
	return out
}

// follow follows redirects with GET until a response that is not one.
func (c *client) follow(t *testing.T, r response) response {
	t.Helper()
	for i := 0; r.status >= 300 && r.status < 400; i++ {
		if i == 10 {
			t.Fatalf("too many redirects, last at %s", r.url)
		}
		r = c.get(t, r.location(t))
	}
	return r
}

// cookieValue returns the value of the named cookie in the jar, or "".
func (c *client) cookieValue(name string) string {
	for _, ck := range c.jar.Cookies(c.ts.base) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

func (c *client) setCookie(name, value string) {
	c.jar.SetCookies(c.ts.base, []*http.Cookie{{Name: name, Value: value, Path: "/"}})
}

// authorize runs sign-in up to the provider's redirect back: GET
// /auth/login, the picker page, and the picker form for subject. It
// returns the callback URL without visiting it.
func (c *client) authorize(t *testing.T, subject, next string) string {
	t.Helper()
	login := "/auth/login"
	if next != "" {
		login += "?next=" + url.QueryEscape(next)
	}
	r := c.get(t, login)
	if r.status != http.StatusFound {
		t.Fatalf("GET %s: status %d; want 302 (body %.300q)", login, r.status, r.body)
	}
	authURL := r.location(t)
	if !strings.HasPrefix(authURL, c.ts.oidc.Issuer+"/authorize?") {
		t.Fatalf("GET %s redirected to %s; want the provider's /authorize", login, authURL)
	}
	picker := c.get(t, authURL)
	if picker.status != http.StatusOK {
		t.Fatalf("GET picker: status %d; want 200 (body %.300q)", picker.status, picker.body)
	}
	action, form := pickerForm(t, picker, subject)
	r = c.post(t, action, form)
	if r.status != http.StatusFound {
		t.Fatalf("POST picker: status %d; want 302 (body %.300q)", r.status, r.body)
	}
	cb := r.location(t)
	if !strings.HasPrefix(cb, c.ts.oidc.RedirectURL+"?") {
		t.Fatalf("provider redirected to %s; want %s", cb, c.ts.oidc.RedirectURL)
	}
	return cb
}

// pickerForm finds the picker's form for subject (or, for subject "",
// the cancel form) and returns its absolute action and fields.
func pickerForm(t *testing.T, picker response, subject string) (string, url.Values) {
	t.Helper()
	sel := "form.devidp-cancel-form"
	if subject != "" {
		sel = "form.devidp-person-form:has(input[name=subject][value=\"" + subject + "\"])"
	}
	form := picker.doc(t).Find(sel)
	if form.Length() != 1 {
		t.Fatalf("picker: %d forms match %s; want 1", form.Length(), sel)
	}
	fields := url.Values{}
	form.Find("input[name]").Each(func(_ int, in *goquery.Selection) {
		name, _ := in.Attr("name")
		v, _ := in.Attr("value")
		fields.Add(name, v)
	})
	action, _ := form.Attr("action")
	u, err := picker.url.Parse(action)
	if err != nil {
		t.Fatalf("picker form action %q: %v", action, err)
	}
	return u.String(), fields
}

// signIn signs a new browser in as subject through the real redirect
// dance and returns it on /connectors.
func (ts *testServer) signIn(t *testing.T, subject string) *client {
	t.Helper()
	c := ts.newClient(t)
	c.signIn(t, subject)
	return c
}

// signIn completes a sign-in in this browser and remembers its CSRF token
// and session cookie. It returns the callback's response.
func (c *client) signIn(t *testing.T, subject string) response {
	t.Helper()
	cb := c.get(t, c.authorize(t, subject, ""))
	if cb.status != http.StatusSeeOther {
		t.Fatalf("GET callback: status %d; want 303 (body %.300q)", cb.status, cb.body)
	}
	page := c.follow(t, cb)
	if page.status != http.StatusOK || page.url.Path != "/connectors" {
		t.Fatalf("sign-in ended on %s with status %d; want /connectors with 200", page.url.Path, page.status)
	}
	c.csrf = csrfTokenOf(t, page)
	c.session = c.cookieValue(c.ts.srv.sessionCookieName())
	if c.session == "" {
		t.Fatalf("no session cookie after sign-in")
	}
	return cb
}

// csrfTokenOf reads the CSRF token from <body hx-headers>, or failing that
// from a csrf_token hidden input.
func csrfTokenOf(t *testing.T, page response) string {
	t.Helper()
	doc := page.doc(t)
	if raw, ok := doc.Find("body").Attr("hx-headers"); ok {
		var h map[string]string
		if err := json.Unmarshal([]byte(raw), &h); err != nil {
			t.Fatalf("body hx-headers %q: %v", raw, err)
		}
		if tok := h[csrfHeader]; tok != "" {
			return tok
		}
	}
	if tok, ok := doc.Find(`input[name="` + csrfField + `"]`).First().Attr("value"); ok && tok != "" {
		return tok
	}
	t.Fatalf("%s: no CSRF token on the page", page.url)
	return ""
}

// whoAmI returns the caller's email from /api/me, or "" when signed out.
func (c *client) whoAmI(t *testing.T, h ...http.Header) string {
	t.Helper()
	r := c.get(t, "/api/me", h...)
	switch r.status {
	case http.StatusOK:
		var me apiMe
		if err := json.Unmarshal([]byte(r.body), &me); err != nil {
			t.Fatalf("/api/me: %v", err)
		}
		return me.Email
	case http.StatusUnauthorized:
		return ""
	}
	t.Fatalf("/api/me: status %d; want 200 or 401 (body %.200q)", r.status, r.body)
	return ""
}

// wantStatus fails the test unless r has status want.
func wantStatus(t *testing.T, r response, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("%s: got status %d; want %d (body %.300q)", r.url, r.status, want, r.body)
	}
}

// isFullPage reports whether an HTML body is a whole document rather
// than a fragment.
func isFullPage(body string) bool {
	b := strings.ToLower(body)
	return strings.Contains(b, "<!doctype html") || strings.Contains(b, "<html") || strings.Contains(b, "<body")
}

// logLine returns the log line with msg written while serving r, found by
// the request id Patchbay sends back.
func (ts *testServer) logLine(t *testing.T, r response, msg string) string {
	t.Helper()
	id := r.header.Get("X-Request-Id")
	if id == "" {
		t.Fatalf("%s: no X-Request-Id header", r.url)
	}
	for _, line := range strings.Split(ts.logs.String(), "\n") {
		if strings.Contains(line, "request_id="+id) && strings.Contains(line, "msg=\""+msg+"\"") {
			return line
		}
	}
	t.Errorf("no log line %q for request %s", msg, id)
	return ""
}
