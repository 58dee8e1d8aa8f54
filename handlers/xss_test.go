package handlers

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"patchbay/db"
	"patchbay/handlers/devidp"
)

// Hostile people: their names and emails come from the identity provider
// and are shown on several pages.
var hostilePeople = []devidp.Person{
	{Subject: "dev-xss-script", Email: `"><img src=x onerror=alert(1)>@example.test`, Name: `<script>alert(1)</script>`, Role: "user"},
	{Subject: "dev-xss-attr", Email: `x@example.test" onmouseover="alert(2)`, Name: `" hx-get="/auth/logout" hx-trigger="load" onload="alert(3)`, Role: "user"},
}

// ownTriggers are the hx-trigger values Patchbay's own markup uses: lists
// that reload when connectors change, and install progress that polls.
var ownTriggers = map[string]bool{"connectors-changed from:body": true, "every 1s": true}

func TestXSSPayloadsRenderInert(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serverOpts{People: append(devidp.DefaultPeople(), hostilePeople...)})
	admin := ts.signIn(t, ada)
	support := ts.signIn(t, sam)
	ts.signIn(t, uma)
	var hostile []*client
	for _, p := range hostilePeople {
		hostile = append(hostile, ts.signIn(t, p.Subject))
	}

	// wantInert parses a response and checks that no payload became markup.
	wantInert := func(t *testing.T, r response, fullPage bool) *goquery.Document {
		t.Helper()
		wantStatus(t, r, http.StatusOK)
		doc := r.doc(t)
		scripts := doc.Find("script")
		wantScripts := 0
		if fullPage {
			wantScripts = 1
		}
		if scripts.Length() != wantScripts {
			t.Errorf("%s: got %d script elements; want %d", r.url.Path, scripts.Length(), wantScripts)
		}
		scripts.Each(func(_ int, s *goquery.Selection) {
			if src, _ := s.Attr("src"); !strings.HasPrefix(src, "/static/htmx-") || strings.TrimSpace(s.Text()) != "" {
				t.Errorf("%s: got script src=%q with text %q; want only the htmx file", r.url.Path, src, s.Text())
			}
		})
		if n := doc.Find("img").Length(); n != 0 {
			t.Errorf("%s: got %d img elements; want none", r.url.Path, n)
		}
		doc.Find("*").Each(func(_ int, s *goquery.Selection) {
			for _, a := range s.Get(0).Attr {
				k := strings.ToLower(a.Key)
				if strings.HasPrefix(k, "on") || (k == "hx-trigger" && !ownTriggers[a.Val]) || (k == "hx-get" && a.Val == "/auth/logout") {
					t.Errorf("%s: got attribute %s=%q on <%s>; want no injected attributes", r.url.Path, a.Key, a.Val, goquery.NodeName(s))
				}
			}
		})
		if strings.Contains(r.body, "<script>alert") || strings.Contains(r.body, "<img") {
			t.Errorf("%s: got a raw payload in the HTML", r.url.Path)
		}
		return doc
	}
	// wantText checks that each payload is shown as text in sel.
	wantText := func(t *testing.T, doc *goquery.Document, sel string, want ...string) {
		t.Helper()
		var got []string
		doc.Find(sel).Each(func(_ int, s *goquery.Selection) { got = append(got, strings.TrimSpace(s.Text())) })
		for _, w := range want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				t.Errorf("%s: got texts %q; want %q among them", sel, got, w)
			}
		}
	}
	names := []string{hostilePeople[0].Name, hostilePeople[1].Name}
	emails := []string{strings.ToLower(hostilePeople[0].Email), strings.ToLower(hostilePeople[1].Email)}

	t.Run("users page", func(t *testing.T) {
		doc := wantInert(t, admin.get(t, "/users"), true)
		wantText(t, doc, `[data-testid="user-name"]`, names...)
		wantText(t, doc, `[data-testid="user-email"]`, emails...)
	})

	t.Run("users table partial", func(t *testing.T) {
		id := ts.user(t, hostilePeople[0].Subject).ID
		r := admin.htmxPost(t, concretePath(t, "/users/:id/role", map[string]int64{"/users/": id}), url.Values{"role": {"support"}})
		doc := wantInert(t, r, false)
		wantText(t, doc, `[data-testid="user-name"]`, names...)
	})

	t.Run("roles section partial", func(t *testing.T) {
		r := admin.htmxPost(t, "/roles", url.Values{"name": {"xss-role"}})
		wantInert(t, r, false)
	})

	t.Run("shared connector grants", func(t *testing.T) {
		fx := ts.seedConnectorFixtures(t, ts.user(t, uma).ID)
		for _, email := range emails {
			r := admin.htmxPost(t, concretePath(t, "/admin/connectors/:id/grants", fx.ids()), url.Values{"grantee": {"user"}, "email": {email}})
			doc := wantInert(t, r, false)
			wantText(t, doc, `[data-testid="grant-label"]`, email)
		}
		doc := wantInert(t, admin.get(t, "/admin/connectors"), true)
		wantText(t, doc, `[data-testid="grant-label"]`, emails...)
	})

	t.Run("hostile connectors: catalog text, tool names and error output", func(t *testing.T) {
		const payload = `<img src=x onerror=alert(5)>`
		// A server whose one tool is named with the payload, and one
		// that dies printing a script to stderr, which becomes its error.
		toolSrc := t.TempDir()
		writeFile(t, filepath.Join(toolSrc, "server.py"), hostileToolServer(payload))
		crashSrc := t.TempDir()
		writeFile(t, filepath.Join(crashSrc, "server.py"), "import sys\nsys.stderr.write('<script>alert(6)</script>\\n')\nsys.exit(1)\n")
		for name, src := range map[string]string{"xss-tool": toolSrc, "xss-crash": crashSrc} {
			ts.addCatalog(t, db.CatalogEntry{
				Name: name, Title: `<script>alert(7)</script>`, Description: payload,
				Kind: db.KindLocal, Scope: db.ScopeBoth, Transport: "stdio",
				Command: "python3", Args: []string{"server.py"}, Source: src,
			})
			r := admin.htmxPost(t, "/admin/connectors", url.Values{"catalog": {name}, "name": {name}, "enable": {"1"}})
			p := r.doc(t).Find(`[data-testid="install-progress"]`)
			wantInert(t, r, false)
			wantInert(t, admin.pollInstall(t, runIDOf(t, p), installDeadline), false)
		}
		doc := wantInert(t, admin.get(t, "/admin/connectors"), true)
		wantText(t, doc, `[data-testid="connector-tool"]`, payload)
		if got := doc.Find(`[data-testid="connector-error"]`).Text(); !strings.Contains(got, "<script>alert(6)</script>") {
			t.Errorf("the crash's stderr is not shown as text in the error: %q", got)
		}
		for _, path := range []string{"/marketplace", "/connectors"} {
			doc := wantInert(t, hostile[0].get(t, path), true)
			if path == "/marketplace" && !strings.Contains(doc.Text(), payload) {
				t.Errorf("%s: the hostile description is not shown as text", path)
			}
		}
	})

	t.Run("support page", func(t *testing.T) {
		doc := wantInert(t, support.get(t, "/support"), true)
		wantText(t, doc, `[data-testid="support-name"]`, names...)
	})

	t.Run("header of the hostile person's own pages", func(t *testing.T) {
		for i, c := range hostile {
			for _, path := range []string{"/connectors", "/tokens", "/marketplace"} {
				doc := wantInert(t, c.get(t, path), true)
				wantText(t, doc, `[data-testid="viewer-name"]`, names[i])
			}
			wantInert(t, c.htmxPost(t, "/tokens", url.Values{"name": {`<img src=x onerror=alert(4)>`}}), false)
			doc := wantInert(t, c.get(t, "/tokens"), true)
			wantText(t, doc, `[data-testid="token-name"]`, `<img src=x onerror=alert(4)>`)
		}
	})

	t.Run("error page for the hostile person", func(t *testing.T) {
		r := hostile[0].get(t, "/users")
		wantStatus(t, r, http.StatusForbidden)
		if strings.Contains(r.body, "<script>alert") {
			t.Error("got a raw payload in the error page")
		}
		wantText(t, r.doc(t), `[data-testid="viewer-name"]`, names[0])
	})

	t.Run("the API returns the payload as JSON, not HTML", func(t *testing.T) {
		r := admin.get(t, "/api/users")
		wantStatus(t, r, http.StatusOK)
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("got Content-Type %q; want application/json", ct)
		}
		if strings.Contains(r.body, "<script>") {
			t.Error("got a raw <script> in JSON; want it escaped")
		}
	})
}

// hostileToolServer is a dependency-free python MCP server whose only tool
// is named name.
func hostileToolServer(name string) string {
	return `import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m = msg.get("method")
    if m == "initialize":
        res = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "x", "version": "1"}}
    elif m == "tools/list":
        res = {"tools": [{"name": ` + strconv.Quote(name) + `, "description": ` + strconv.Quote(name) + `, "inputSchema": {"type": "object"}}]}
    else:
        res = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": res}) + "\n")
    sys.stdout.flush()
`
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
