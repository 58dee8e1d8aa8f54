package views

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

// testCSRF holds characters that would break out of a JSON string or an
// HTML attribute if either escaping were skipped.
const testCSRF = `csrf-"quote'<tag>&amp`

// xssPayloads are rendered into every text field a person can influence.
var xssPayloads = []string{
	`<script>alert(1)</script>`,
	`"><img src=x onerror=alert(1)>`,
}

// render renders c into a buffer and returns the raw HTML and its parse.
func render(t *testing.T, c templ.Component) (string, *goquery.Document) {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	html := buf.String()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return html, doc
}

// byTestID selects elements by data-testid.
func byTestID(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(`[data-testid="` + id + `"]`)
}

// signedIn is a shell for a signed-in admin who may see every section.
func signedIn(active string) Shell {
	return Shell{
		Title:     "Page",
		Active:    active,
		Viewer:    &Viewer{Name: "Ada Admin", Email: "ada@example.com", Role: "admin"},
		Nav:       Nav{Connectors: true, Marketplace: true, Users: true, Support: true, Tokens: true, SharedConnectors: true},
		CSRFToken: testCSRF,
	}
}

// usersProps fills every list so that every form and branch renders, with
// text taken from s wherever a person could influence it.
func usersProps(shell Shell, s string) UsersProps {
	return UsersProps{
		Shell: shell,
		Users: []UserRow{
			{ID: 1, Name: "Ada " + s, Email: "ada@example.com", Role: "admin", IsSelf: true, LastSeen: "today", Sessions: 1},
			{ID: 2, Name: "Bob " + s, Email: s + "@example.com", Role: "role " + s, Sessions: 2},
			{ID: 3, Name: "Cy " + s, Email: "cy@example.com", Role: "user", Disabled: true},
		},
		Roles: []RoleRow{
			{Name: "admin", BuiltIn: true, Members: 1},
			{Name: "role " + s, Members: 1, Capabilities: []CapabilityRow{
				{Name: "api.tokens", Description: "Tokens " + s, Held: true},
				{Name: "users.manage", Description: "Manage", Held: false},
			}},
		},
		RoleNames: []string{"admin", "user", "role " + s},
		AllCapabilities: []CapabilityRow{
			{Name: "api.tokens", Description: "Tokens " + s, Held: true},
			{Name: "users.manage", Description: "Manage " + s},
		},
		Flash:      "Saved " + s,
		Error:      "Failed " + s,
		RolesFlash: "Role saved " + s,
		RolesError: "Role failed " + s,
	}
}

func tokensProps(shell Shell, s string) TokensProps {
	return TokensProps{
		Shell: shell,
		Tokens: []TokenRow{
			{ID: 7, Name: "backup " + s, Prefix: "pb_ab12", Created: "2025-01-01", LastUsed: ""},
		},
		Created: &NewToken{Name: "new " + s, Secret: "pb_secretvalue123"},
		Error:   "Token failed " + s,
		BaseURL: "https://patchbay.example.com",
	}
}

type namedComponent struct {
	name     string
	fullPage bool
	c        templ.Component
}

// everything lists every exported component with props that exercise all
// its branches, with s in every text field a person can influence.
func everything(s string) []namedComponent {
	shell := signedIn("users")
	shell.Viewer.Name += " " + s
	shell.Viewer.Role += " " + s
	shell.Title = "Title " + s
	shell.DevSignIn = true
	errProps := ErrorProps{Shell: shell, Status: 403, Title: "No " + s, Message: "Denied " + s}
	signedOut := Shell{Title: "Sign in", DevSignIn: true}
	return []namedComponent{
		{"SignInPage", true, SignInPage(SignInProps{Shell: signedOut, DevSignIn: true, Error: "Bad " + s, Next: "/users?x=" + s})},
		{"ConnectorsPage", true, ConnectorsPage(ConnectorsProps{Shell: shell, CanBrowseMarketplace: true})},
		{"ConnectorsPage without marketplace", true, ConnectorsPage(ConnectorsProps{Shell: shell})},
		{"MarketplacePage", true, MarketplacePage(MarketplaceProps{Shell: shell})},
		{"ErrorPage", true, ErrorPage(errProps)},
		{"ErrorPage signed out", true, ErrorPage(ErrorProps{Shell: signedOut, Status: 401, Title: "Sign in " + s, Message: s})},
		{"ErrorFragment", false, ErrorFragment(errProps)},
		{"UsersPage", true, UsersPage(usersProps(shell, s))},
		{"UsersPage empty", true, UsersPage(UsersProps{Shell: shell})},
		{"UsersTable", false, UsersTable(usersProps(shell, s))},
		{"RolesSection", false, RolesSection(usersProps(shell, s))},
		{"SupportPage", true, SupportPage(SupportProps{Shell: shell, People: []SupportRow{
			{Name: "Bob " + s, Email: s, Role: "role " + s, LastSeen: s, Sessions: 1, Connectors: 2},
			{Name: "Cy", Disabled: true},
		}})},
		{"SupportPage empty", true, SupportPage(SupportProps{Shell: shell})},
		{"TokensPage", true, TokensPage(tokensProps(shell, s))},
		{"TokensPage empty", true, TokensPage(TokensProps{Shell: shell})},
		{"TokensPanel", false, TokensPanel(tokensProps(shell, s))},
		{"ConnectorsPage with connectors", true, ConnectorsPage(connectorsProps(shell, s))},
		{"ConnectorsList", false, ConnectorsList(connectorsProps(shell, s))},
		{"MarketplacePage with entries", true, MarketplacePage(marketplaceProps(shell, s))},
		{"SharedConnectorsPage", true, SharedConnectorsPage(sharedProps(shell, s))},
		{"SharedConnectorsPage empty", true, SharedConnectorsPage(SharedConnectorsProps{Shell: shell, CatalogEmpty: true})},
		{"SharedConnectorsPage nothing shareable", true, SharedConnectorsPage(SharedConnectorsProps{Shell: shell})},
		{"SharedConnectorsList", false, SharedConnectorsList(sharedProps(shell, s))},
		{"ConnectorFormPage", true, ConnectorFormPage(formProps(shell, s, 0))},
		{"ConnectorForm", false, ConnectorForm(formProps(shell, s, 0))},
		{"ConnectorForm editing", false, ConnectorForm(formProps(shell, s, 7))},
		{"InstallPage running", true, InstallPage(installProps(shell, s, InstallRunning))},
		{"InstallPage failed", true, InstallPage(installProps(shell, s, InstallFailed))},
		{"InstallProgress running", false, InstallProgress(installProps(shell, s, InstallRunning))},
		{"InstallProgress succeeded", false, InstallProgress(installProps(shell, s, InstallSucceeded))},
		{"ConnectorOutputPage", true, ConnectorOutputPage(ConnectorOutputProps{Shell: shell, ID: 7, Name: "out-" + s, Output: "stderr " + s})},
		{"ConnectorOutput empty", false, ConnectorOutput(ConnectorOutputProps{Shell: shell, ID: 7, Name: "out"})},
		{"ConnectorOutputPage own", true, ConnectorOutputPage(ConnectorOutputProps{Shell: shell, ID: 7, Name: "own-" + s, Output: "stderr " + s, Own: true})},
		{"PanelNotice", false, PanelNotice("Added " + s)},
		{"TestConnectionResult connected", false, TestConnectionResult(TestConnectionProps{Tools: []string{"search", "tool-" + s}})},
		{"TestConnectionResult failed", false, TestConnectionResult(TestConnectionProps{Error: "exited with code 1: " + s})},
	}
}

func TestNavShowsOnlyFlaggedItems(t *testing.T) {
	all := []string{"connectors", "marketplace", "shared-connectors", "users", "support", "tokens"}
	hrefs := map[string]string{"shared-connectors": "/admin/connectors"}
	tests := []struct {
		name   string
		nav    Nav
		active string
		want   []string
	}{
		{"no flags hides the nav", Nav{}, "", nil},
		{"a user sees connectors, marketplace and tokens", Nav{Connectors: true, Marketplace: true, Tokens: true}, "tokens", []string{"connectors", "marketplace", "tokens"}},
		{"support sees support only", Nav{Support: true}, "support", []string{"support"}},
		{"an admin sees everything", Nav{true, true, true, true, true, true}, "users", all},
		{"a catalog admin sees shared connectors", Nav{Connectors: true, SharedConnectors: true}, "shared-connectors", []string{"connectors", "shared-connectors"}},
		{"an unflagged active section is not shown", Nav{Connectors: true}, "users", []string{"connectors"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shell := signedIn(tt.active)
			shell.Nav = tt.nav
			_, doc := render(t, ConnectorsPage(ConnectorsProps{Shell: shell}))
			if got, want := byTestID(doc, "nav").Length() > 0, len(tt.want) > 0; got != want {
				t.Errorf("nav present = %v; want %v", got, want)
			}
			for _, key := range all {
				link := byTestID(doc, "nav-"+key)
				shown := false
				for _, w := range tt.want {
					shown = shown || w == key
				}
				if got := link.Length(); (got == 1) != shown {
					t.Errorf("nav-%s count = %d; want shown=%v", key, got, shown)
				}
				if !shown {
					continue
				}
				wantHref := hrefs[key]
				if wantHref == "" {
					wantHref = "/" + key
				}
				if href, _ := link.Attr("href"); href != wantHref {
					t.Errorf("nav-%s href = %q; want %q", key, href, wantHref)
				}
				cur, has := link.Attr("aria-current")
				if want := key == tt.active; has != want || (has && cur != "page") {
					t.Errorf("nav-%s aria-current = %q (present %v); want present %v with \"page\"", key, cur, has, want)
				}
			}
		})
	}
}

func TestHeaderShowsViewerAndSignOut(t *testing.T) {
	t.Run("signed in shows name, role and a sign-out post form", func(t *testing.T) {
		_, doc := render(t, ConnectorsPage(ConnectorsProps{Shell: signedIn("connectors")}))
		if got := byTestID(doc, "viewer-name").Text(); got != "Ada Admin" {
			t.Errorf("viewer name = %q; want %q", got, "Ada Admin")
		}
		if got := byTestID(doc, "viewer-role").Text(); got != "admin" {
			t.Errorf("viewer role = %q; want %q", got, "admin")
		}
		form := byTestID(doc, "sign-out-form")
		if m, _ := form.Attr("method"); m != "post" {
			t.Errorf("sign-out method = %q; want post", m)
		}
		if a, _ := form.Attr("action"); a != "/auth/logout" {
			t.Errorf("sign-out action = %q; want /auth/logout", a)
		}
	})
	t.Run("signed out shows no viewer", func(t *testing.T) {
		_, doc := render(t, SignInPage(SignInProps{}))
		if n := byTestID(doc, "viewer").Length(); n != 0 {
			t.Errorf("viewer count = %d; want 0", n)
		}
	})
}

func TestUntrustedTextIsEscaped(t *testing.T) {
	for _, payload := range xssPayloads {
		for _, nc := range everything(payload) {
			t.Run(nc.name+" "+payload, func(t *testing.T) {
				html, doc := render(t, nc.c)
				if n := doc.Find("img").Length(); n != 0 {
					t.Errorf("img elements = %d; want 0", n)
				}
				doc.Find("script").Each(func(_ int, s *goquery.Selection) {
					if src, _ := s.Attr("src"); src != "/static/htmx-2.0.11.min.js" {
						t.Errorf("unexpected script element with src %q: %s", src, s.Text())
					}
				})
				if strings.Contains(html, payload) {
					t.Errorf("raw payload %q appears unescaped in the HTML", payload)
				}
				assertNoEventHandlers(t, doc)
			})
		}
	}

	t.Run("the payload is shown as text", func(t *testing.T) {
		payload := xssPayloads[0]
		props := usersProps(signedIn("users"), payload)
		for _, c := range []templ.Component{UsersPage(props), UsersTable(props)} {
			_, doc := render(t, c)
			if got := byTestID(doc, "user-name").Eq(1).Text(); got != "Bob "+payload {
				t.Errorf("user name text = %q; want %q", got, "Bob "+payload)
			}
			if got := doc.Find(`#users-table [data-testid="error"]`).Text(); got != "Failed "+payload {
				t.Errorf("error text = %q; want %q", got, "Failed "+payload)
			}
		}
		frag := ErrorFragment(ErrorProps{Title: "T", Message: payload})
		_, doc := render(t, frag)
		if got := byTestID(doc, "error-message").Text(); got != payload {
			t.Errorf("fragment message = %q; want %q", got, payload)
		}
	})
}

func TestCSRFToken(t *testing.T) {
	for _, nc := range everything("x") {
		t.Run(nc.name, func(t *testing.T) {
			_, doc := render(t, nc.c)
			body := doc.Find("body")
			headers, has := body.Attr("hx-headers")
			signedInPage := nc.fullPage && byTestID(doc, "viewer").Length() > 0
			switch {
			case signedInPage:
				var got map[string]string
				if err := json.Unmarshal([]byte(headers), &got); err != nil {
					t.Fatalf("body hx-headers %q is not JSON: %v", headers, err)
				}
				if len(got) != 1 || got["X-CSRF-Token"] != testCSRF {
					t.Errorf("body hx-headers = %v; want only X-CSRF-Token=%q", got, testCSRF)
				}
			case nc.fullPage && has:
				t.Errorf("signed-out page has hx-headers %q; want none", headers)
			}

			forms := doc.Find("form")
			forms.Each(func(i int, f *goquery.Selection) {
				if m, _ := f.Attr("method"); !strings.EqualFold(m, "post") {
					return
				}
				inputs := f.Find(`input[type="hidden"][name="csrf_token"]`)
				if inputs.Length() != 1 {
					t.Errorf("form %d (%s) has %d csrf_token inputs; want 1", i, f.AttrOr("action", "?"), inputs.Length())
					return
				}
				if v, _ := inputs.Attr("value"); v != testCSRF {
					t.Errorf("form %d csrf_token = %q; want %q", i, v, testCSRF)
				}
			})
			if signedInPage && forms.Length() == 0 {
				t.Errorf("signed-in page has no forms; want at least the sign-out form")
			}
		})
	}
}

func TestNewTokenBoxOnlyWhenCreated(t *testing.T) {
	const secret = "pb_secretvalue123"
	withToken := tokensProps(signedIn("tokens"), "x")
	without := withToken
	without.Created = nil

	for _, tc := range []struct {
		name  string
		props TokensProps
		want  bool
	}{
		{"no new token shows no box", without, false},
		{"a new token shows the box once", withToken, true},
	} {
		for _, c := range []struct {
			kind string
			c    templ.Component
		}{{"page", TokensPage(tc.props)}, {"panel", TokensPanel(tc.props)}} {
			t.Run(tc.name+" in the "+c.kind, func(t *testing.T) {
				html, doc := render(t, c.c)
				box := byTestID(doc, "new-token")
				if got := box.Length() == 1; got != tc.want {
					t.Fatalf("new-token box present = %v; want %v", got, tc.want)
				}
				if got, want := strings.Count(html, secret), map[bool]int{true: 1, false: 0}[tc.want]; got != want {
					t.Errorf("secret occurs %d times in the HTML; want %d", got, want)
				}
				if !tc.want {
					return
				}
				input := byTestID(doc, "new-token-secret")
				if v, _ := input.Attr("value"); v != secret {
					t.Errorf("secret input value = %q; want %q", v, secret)
				}
				if _, ro := input.Attr("readonly"); !ro {
					t.Errorf("secret input is not readonly")
				}
				if text := box.Text(); !strings.Contains(text, "Copy it now: it will not be shown again.") {
					t.Errorf("box text = %q; want the copy-it-now warning", text)
				}
				curl := byTestID(doc, "new-token-curl").Text()
				want := `curl -H "Authorization: Bearer $PATCHBAY_TOKEN" https://patchbay.example.com/api/me`
				if curl != want {
					t.Errorf("curl example = %q; want %q", curl, want)
				}
				if c.kind == "page" {
					if h, _ := doc.Find("body").Attr("hx-history"); h != "false" {
						t.Errorf("body hx-history = %q; want \"false\" on a page holding a secret", h)
					}
				}
			})
		}
	}

	t.Run("without a base URL the example uses $PATCHBAY_URL", func(t *testing.T) {
		p := withToken
		p.BaseURL = ""
		_, doc := render(t, TokensPanel(p))
		if got := byTestID(doc, "new-token-curl").Text(); !strings.HasSuffix(got, "$PATCHBAY_URL/api/me") {
			t.Errorf("curl example = %q; want it to end in $PATCHBAY_URL/api/me", got)
		}
	})
}

func TestNoInlineStyleOrScript(t *testing.T) {
	for _, nc := range everything("x") {
		t.Run(nc.name, func(t *testing.T) {
			html, doc := render(t, nc.c)
			if n := doc.Find("[style]").Length(); n != 0 {
				t.Errorf("elements with a style attribute = %d; want 0", n)
			}
			if strings.Contains(strings.ToLower(html), "style=") {
				t.Errorf("HTML contains style=")
			}
			if n := doc.Find("style").Length(); n != 0 {
				t.Errorf("style elements = %d; want 0", n)
			}
			doc.Find("script").Each(func(_ int, s *goquery.Selection) {
				src, ok := s.Attr("src")
				if !ok || !strings.HasPrefix(src, "/static/") || strings.TrimSpace(s.Text()) != "" {
					t.Errorf("inline or foreign script: src=%q body=%q", src, s.Text())
				}
			})
			if strings.Contains(strings.ToLower(html), "javascript:") {
				t.Errorf("HTML contains a javascript: URL")
			}
			assertNoEventHandlers(t, doc)
			if nc.fullPage {
				if n := doc.Find(`link[rel="stylesheet"][href="/static/style.css"]`).Length(); n != 1 {
					t.Errorf("stylesheet links = %d; want 1", n)
				}
				if n := doc.Find(`script[src="/static/htmx-2.0.11.min.js"]`).Length(); n != 1 {
					t.Errorf("htmx scripts = %d; want 1", n)
				}
			} else if n := doc.Find("header, title, script").Length(); n != 0 {
				t.Errorf("fragment contains %d page-level elements; want 0", n)
			}
		})
	}
}

// assertNoEventHandlers fails on any inline handler: on* attributes, and
// HTMX's hx-on variants, which also run inline code.
func assertNoEventHandlers(t *testing.T, doc *goquery.Document) {
	t.Helper()
	doc.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, a := range s.Nodes[0].Attr {
			k := strings.ToLower(a.Key)
			if strings.HasPrefix(k, "on") || strings.HasPrefix(k, "hx-on") || strings.HasPrefix(k, "data-hx-on") {
				t.Errorf("<%s> has event handler attribute %s=%q", goquery.NodeName(s), a.Key, a.Val)
			}
		}
	})
}

func TestHTMXConfig(t *testing.T) {
	_, doc := render(t, ConnectorsPage(ConnectorsProps{Shell: signedIn("connectors")}))
	content, ok := doc.Find(`meta[name="htmx-config"]`).Attr("content")
	if !ok {
		t.Fatal("no htmx-config meta")
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(content), &got); err != nil {
		t.Fatalf("htmx-config %q is not JSON: %v", content, err)
	}
	want := map[string]any{"includeIndicatorStyles": false, "historyCacheSize": 0.0, "allowEval": false, "allowScriptTags": false}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("htmx-config %s = %v; want %v", k, got[k], v)
		}
	}
}

func TestDevBannerOnlyWithDevSignIn(t *testing.T) {
	for _, dev := range []bool{false, true} {
		shell := signedIn("connectors")
		shell.DevSignIn = dev
		_, doc := render(t, ConnectorsPage(ConnectorsProps{Shell: shell}))
		banner := byTestID(doc, "dev-banner")
		if got := banner.Length() == 1; got != dev {
			t.Errorf("DevSignIn=%v: banner present = %v; want %v", dev, got, dev)
		}
		if dev {
			want := "Development sign-in: anyone on this machine can sign in as anyone"
			if got := strings.Join(strings.Fields(banner.Text()), " "); !strings.Contains(got, want) {
				t.Errorf("banner text = %q; want it to contain %q", got, want)
			}
		}
	}
}

func TestUsersTable(t *testing.T) {
	props := usersProps(signedIn("users"), "x")
	_, doc := render(t, UsersTable(props))
	rows := byTestID(doc, "user-row")
	if rows.Length() != 3 {
		t.Fatalf("user rows = %d; want 3", rows.Length())
	}

	t.Run("the self row cannot be disabled", func(t *testing.T) {
		self := rows.Eq(0)
		if n := self.Find(`[data-testid="user-disable"], [data-testid="user-enable"]`).Length(); n != 0 {
			t.Errorf("self row has %d disable/enable buttons; want 0", n)
		}
		if n := self.Find(`[data-testid="user-self-note"]`).Length(); n != 1 {
			t.Errorf("self row notes = %d; want 1", n)
		}
	})

	t.Run("an active user gets a confirmed disable form", func(t *testing.T) {
		form := rows.Eq(1).Find(`[data-testid="user-disable"]`).Closest("form")
		assertForm(t, form, "/users/2/disable", "#users-table")
		if got, want := form.AttrOr("hx-confirm", ""), "Disable Bob x? Their sessions end now."; got != want {
			t.Errorf("hx-confirm = %q; want %q", got, want)
		}
	})

	t.Run("a disabled user gets an enable form", func(t *testing.T) {
		form := rows.Eq(2).Find(`[data-testid="user-enable"]`).Closest("form")
		assertForm(t, form, "/users/3/enable", "#users-table")
		if got := byTestID(doc, "user-status").Eq(2).Text(); got != "Disabled" {
			t.Errorf("status = %q; want Disabled", got)
		}
	})

	t.Run("each row has a role form with the current role selected", func(t *testing.T) {
		rows.Each(func(i int, row *goquery.Selection) {
			form := row.Find(`[data-testid="user-role-form"]`)
			assertForm(t, form, userURL(props.Users[i].ID, "role"), "#users-table")
			sel := form.Find(`select[name="role"]`)
			if got := sel.Find("option[selected]").AttrOr("value", ""); got != props.Users[i].Role {
				t.Errorf("row %d selected role = %q; want %q", i, got, props.Users[i].Role)
			}
		})
	})

	t.Run("a role missing from the choices is kept", func(t *testing.T) {
		p := props
		p.RoleNames = []string{"admin", "user"}
		_, doc := render(t, UsersTable(p))
		got := byTestID(doc, "user-row").Eq(1).Find("option[selected]").AttrOr("value", "")
		if got != "role x" {
			t.Errorf("selected role = %q; want %q", got, "role x")
		}
	})

	t.Run("flash and error use status and alert roles", func(t *testing.T) {
		if got := byTestID(doc, "flash").AttrOr("role", ""); got != "status" {
			t.Errorf("flash role = %q; want status", got)
		}
		if got := byTestID(doc, "error").AttrOr("role", ""); got != "alert" {
			t.Errorf("error role = %q; want alert", got)
		}
	})

	t.Run("no users shows an empty state", func(t *testing.T) {
		_, doc := render(t, UsersTable(UsersProps{Shell: signedIn("users")}))
		if n := byTestID(doc, "users-empty").Length(); n != 1 {
			t.Errorf("empty states = %d; want 1", n)
		}
		if n := doc.Find("table").Length(); n != 0 {
			t.Errorf("tables = %d; want 0", n)
		}
	})
}

func TestRolesSection(t *testing.T) {
	props := usersProps(signedIn("users"), "x")
	_, doc := render(t, RolesSection(props))

	t.Run("admin holds every capability", func(t *testing.T) {
		admin := doc.Find(`[data-testid="role-row"][data-role="admin"]`)
		if n := admin.Find(`[data-testid="role-every-capability"]`).Length(); n != 1 {
			t.Errorf("admin every-capability notes = %d; want 1", n)
		}
	})

	t.Run("other roles list only held capabilities", func(t *testing.T) {
		caps := doc.Find(`[data-testid="role-row"][data-role="role x"] [data-testid="role-capability"]`)
		if caps.Length() != 1 || !strings.Contains(caps.Text(), "api.tokens") {
			t.Errorf("capabilities = %q (%d); want only api.tokens", caps.Text(), caps.Length())
		}
	})

	t.Run("the create form pre-checks the default capabilities", func(t *testing.T) {
		form := byTestID(doc, "role-create-form")
		assertForm(t, form, "/roles", "#roles-section")
		if n := form.Find(`input[name="name"]`).Length(); n != 1 {
			t.Errorf("name inputs = %d; want 1", n)
		}
		boxes := form.Find(`input[type="checkbox"][name="capability"]`)
		if boxes.Length() != len(props.AllCapabilities) {
			t.Fatalf("checkboxes = %d; want %d", boxes.Length(), len(props.AllCapabilities))
		}
		boxes.Each(func(i int, b *goquery.Selection) {
			c := props.AllCapabilities[i]
			if v := b.AttrOr("value", ""); v != c.Name {
				t.Errorf("checkbox %d value = %q; want %q", i, v, c.Name)
			}
			if _, checked := b.Attr("checked"); checked != c.Held {
				t.Errorf("checkbox %s checked = %v; want %v", c.Name, checked, c.Held)
			}
		})
	})

	t.Run("roles flash and error appear in the section", func(t *testing.T) {
		if got := byTestID(doc, "flash").Text(); got != "Role saved x" {
			t.Errorf("flash = %q; want %q", got, "Role saved x")
		}
		if got := byTestID(doc, "error").Text(); got != "Role failed x" {
			t.Errorf("error = %q; want %q", got, "Role failed x")
		}
	})
}

func TestTokensPanel(t *testing.T) {
	props := tokensProps(signedIn("tokens"), "x")
	_, doc := render(t, TokensPanel(props))

	t.Run("the create form swaps the panel", func(t *testing.T) {
		form := byTestID(doc, "token-create-form")
		assertForm(t, form, "/tokens", "#tokens-panel")
		if n := form.Find(`input[name="name"]`).Length(); n != 1 {
			t.Errorf("name inputs = %d; want 1", n)
		}
	})

	t.Run("revoke is confirmed", func(t *testing.T) {
		form := byTestID(doc, "token-revoke").Closest("form")
		assertForm(t, form, "/tokens/7/revoke", "#tokens-panel")
		if got := form.AttrOr("hx-confirm", ""); !strings.Contains(got, "backup x") {
			t.Errorf("hx-confirm = %q; want it to name the token", got)
		}
	})

	t.Run("no tokens shows an empty state", func(t *testing.T) {
		_, doc := render(t, TokensPanel(TokensProps{Shell: signedIn("tokens")}))
		if got := byTestID(doc, "tokens-empty").Text(); !strings.Contains(got, "No tokens yet") {
			t.Errorf("empty state = %q; want it to say No tokens yet", got)
		}
	})
}

// assertForm checks that form posts to action both as a plain form and
// through HTMX, replacing target.
func assertForm(t *testing.T, form *goquery.Selection, action, target string) {
	t.Helper()
	if form.Length() != 1 {
		t.Fatalf("forms for %s = %d; want 1", action, form.Length())
	}
	want := map[string]string{
		"method": "post", "action": action,
		"hx-post": action, "hx-target": target, "hx-swap": "outerHTML",
	}
	for k, v := range want {
		if got := form.AttrOr(k, ""); got != v {
			t.Errorf("form %s = %q; want %q", k, got, v)
		}
	}
}

func TestPagesEmbedTheirPartials(t *testing.T) {
	users := usersProps(signedIn("users"), "x")
	tokens := tokensProps(signedIn("tokens"), "x")
	tests := []struct {
		name     string
		page     templ.Component
		partial  templ.Component
		selector string
	}{
		{"users table", UsersPage(users), UsersTable(users), "#users-table"},
		{"roles section", UsersPage(users), RolesSection(users), "#roles-section"},
		{"tokens panel", TokensPage(tokens), TokensPanel(tokens), "#tokens-panel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, page := render(t, tt.page)
			_, part := render(t, tt.partial)
			got, err := goquery.OuterHtml(page.Find(tt.selector))
			if err != nil {
				t.Fatal(err)
			}
			want, err := goquery.OuterHtml(part.Find(tt.selector))
			if err != nil {
				t.Fatal(err)
			}
			if got == "" || got != want {
				t.Errorf("page's %s differs from the partial:\n got %s\nwant %s", tt.selector, got, want)
			}
		})
	}
}

func TestSignInPage(t *testing.T) {
	tests := []struct {
		name, next, wantHref string
	}{
		{"without next", "", "/auth/login"},
		{"with next", "/users?tab=roles", "/auth/login?next=%2Fusers%3Ftab%3Droles"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, doc := render(t, SignInPage(SignInProps{Next: tt.next}))
			if got := byTestID(doc, "sign-in-link").AttrOr("href", ""); got != tt.wantHref {
				t.Errorf("sign-in href = %q; want %q", got, tt.wantHref)
			}
			if n := byTestID(doc, "error").Length(); n != 0 {
				t.Errorf("error boxes = %d; want 0", n)
			}
		})
	}
	t.Run("an error is shown in an alert", func(t *testing.T) {
		_, doc := render(t, SignInPage(SignInProps{Error: "That did not work."}))
		box := byTestID(doc, "error")
		if box.Text() != "That did not work." || box.AttrOr("role", "") != "alert" {
			t.Errorf("error box = %q role %q; want the message with role alert", box.Text(), box.AttrOr("role", ""))
		}
	})
}

func TestConnectorsEmptyState(t *testing.T) {
	t.Run("points to the marketplace when the viewer may browse it", func(t *testing.T) {
		_, doc := render(t, ConnectorsPage(ConnectorsProps{Shell: signedIn("connectors"), CanBrowseMarketplace: true}))
		if !strings.Contains(byTestID(doc, "connectors-empty").Text(), "No connectors yet") {
			t.Errorf("empty state does not say No connectors yet")
		}
		if got := byTestID(doc, "connectors-marketplace-link").AttrOr("href", ""); got != "/marketplace" {
			t.Errorf("marketplace link = %q; want /marketplace", got)
		}
	})
	t.Run("tells the viewer to ask an admin otherwise", func(t *testing.T) {
		_, doc := render(t, ConnectorsPage(ConnectorsProps{Shell: signedIn("connectors")}))
		if n := byTestID(doc, "connectors-marketplace-link").Length(); n != 0 {
			t.Errorf("marketplace links = %d; want 0", n)
		}
		if !strings.Contains(byTestID(doc, "connectors-ask-admin").Text(), "Ask an admin") {
			t.Errorf("empty state does not say to ask an admin")
		}
	})
}

func TestMarketplaceSaysNoFeed(t *testing.T) {
	_, doc := render(t, MarketplacePage(MarketplaceProps{Shell: signedIn("marketplace")}))
	if got := byTestID(doc, "marketplace-empty").Text(); !strings.Contains(got, "No marketplace feed is configured yet") {
		t.Errorf("marketplace empty state = %q; want it to say no feed is configured", got)
	}
}

func TestErrorFragmentIsAnAlertOnly(t *testing.T) {
	html, doc := render(t, ErrorFragment(ErrorProps{Status: 403, Title: "Forbidden", Message: "You may not."}))
	box := byTestID(doc, "error-fragment")
	if box.AttrOr("role", "") != "alert" {
		t.Errorf("fragment role = %q; want alert", box.AttrOr("role", ""))
	}
	if strings.Contains(html, "<html") || strings.Contains(html, "<body") {
		t.Errorf("fragment renders a whole document: %s", html)
	}
}

func TestSupportPageIsReadOnly(t *testing.T) {
	_, doc := render(t, SupportPage(SupportProps{Shell: signedIn("support"), People: []SupportRow{{Name: "Bob", Connectors: 3}}}))
	if n := byTestID(doc, "support-row").Length(); n != 1 {
		t.Errorf("support rows = %d; want 1", n)
	}
	if n := doc.Find("main form, main input, main select, main button").Length(); n != 0 {
		t.Errorf("controls in main = %d; want 0", n)
	}
}
