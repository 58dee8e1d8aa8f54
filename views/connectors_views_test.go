package views

import (
	"fmt"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

// connectorRows covers every phase, with s in every text a connector's
// manifest or its errors can influence.
func connectorRows(s string) []ConnectorRow {
	return []ConnectorRow{
		{ID: 1, Name: "ready-one", Title: "Ready " + s, Kind: "local", Transport: "stdio", Enabled: true, Phase: PhaseReady,
			Tools: []string{"search", "tool-" + s}, InstallRunID: 11, InstallStatus: InstallSucceeded},
		{ID: 2, Name: "restarting", Enabled: true, Phase: PhaseRestarting, Attempt: 3, LastError: "exited " + s},
		{ID: 3, Name: "failed", Enabled: true, Phase: PhaseFailed, LastError: "command not found: " + s, InstallRunID: 12, InstallStatus: InstallFailed},
		{ID: 4, Name: "off", Phase: PhaseDisabled},
		{ID: 5, Name: "busy", Enabled: true, Phase: PhaseInstalling, InstallRunID: 13, InstallStatus: InstallRunning},
		{ID: 6, Name: "shared", Enabled: true, Phase: PhaseNotRunning, Shared: true},
	}
}

func connectorsProps(shell Shell, s string) ConnectorsProps {
	return ConnectorsProps{Shell: shell, CanBrowseMarketplace: true, Connectors: connectorRows(s), Flash: "Done " + s}
}

func marketplaceProps(shell Shell, s string) MarketplaceProps {
	return MarketplaceProps{Shell: shell, Entries: []MarketplaceEntry{
		{Name: "echo", Title: "Echo " + s, Description: "Says " + s, Kind: "local", Transport: "stdio", ActiveAs: []string{"echo", "x" + s},
			Inputs: inputs("activate-echo-input", s)},
		{Name: "oauthy", Title: "OAuth", Kind: "remote", Transport: "streamable-http", Unsupported: "Sign-in activation arrives in a later release."},
	}}
}

func inputs(prefix, s string) []InputField {
	return []InputField{
		{ID: prefix + "-KEY", Name: "secret.KEY", Label: "Key " + s, Description: "Your key " + s, Secret: true, Required: true},
		{ID: prefix + "-OLD", Name: "secret.OLD", Label: "Old", Secret: true, Stored: true},
		{ID: prefix + "-MODE", Name: "input.MODE", Label: "Mode", Description: "How " + s, Value: "loud " + s, Required: true},
	}
}

func sharedProps(shell Shell, s string) SharedConnectorsProps {
	var rows []SharedConnectorRow
	for i, r := range connectorRows(s) {
		r.Shared = true
		row := SharedConnectorRow{ConnectorRow: r}
		if i == 0 {
			row.Grants = []GrantRow{{ID: 1, Label: "Everyone"}, {ID: 2, Label: "Role: " + s}, {ID: 3, Label: s + "@example.com"}}
		}
		rows = append(rows, row)
	}
	return SharedConnectorsProps{
		Shell: shell, Connectors: rows, Roles: []string{"admin", "role " + s},
		Catalog: []CatalogChoice{{Name: "echo", Title: "Echo " + s, Kind: "local", Transport: "stdio"}},
		Flash:   "Shared " + s, Error: "Failed " + s,
	}
}

func formProps(shell Shell, s string, editID int64) ConnectorFormProps {
	return ConnectorFormProps{Shell: shell, EditID: editID, CatalogName: "echo", CatalogTitle: "Echo " + s, Description: "About " + s,
		Name: "echo", Inputs: inputs("connector-input", s), EnableNow: true}
}

func installProps(shell Shell, s, status string) InstallProps {
	p := InstallProps{Shell: shell, ID: 42, Connector: "echo", Reason: "activate", Status: status, Started: "2025-01-01 10:00:00 UTC",
		Log: "Collecting " + s + "\n» echo is ready\n", BackURL: "/connectors", BackLabel: "Back to your connectors"}
	if status != InstallRunning {
		p.Finished = "2025-01-01 10:00:05 UTC"
	}
	if status == InstallFailed {
		p.Error = "command not found: " + s
	}
	return p
}

func TestInstallProgressPollsOnlyWhileRunning(t *testing.T) {
	shell := signedIn("connectors")
	for _, status := range []string{InstallRunning, InstallSucceeded, InstallUnchanged, InstallFailed} {
		t.Run(status, func(t *testing.T) {
			_, doc := render(t, InstallProgress(installProps(shell, "x", status)))
			p := byTestID(doc, "install-progress")
			if p.AttrOr("id", "") != "install-42" || p.AttrOr("data-status", "") != status {
				t.Errorf("got id %q status %q", p.AttrOr("id", ""), p.AttrOr("data-status", ""))
			}
			running := status == InstallRunning
			want := map[string]string{"hx-get": "/installs/42", "hx-trigger": "every 1s", "hx-swap": "outerHTML", "hx-target": "this"}
			for k, v := range want {
				got, has := p.Attr(k)
				if has != running || (running && got != v) {
					t.Errorf("%s = %q (present %v); want present %v with %q", k, got, has, running, v)
				}
			}
			if got := byTestID(doc, "install-log").Text(); got != "Collecting x\n» echo is ready\n" {
				t.Errorf("log = %q", got)
			}
			if got := byTestID(doc, "install-error").Length() == 1; got != (status == InstallFailed) {
				t.Errorf("error shown = %v; want %v", got, status == InstallFailed)
			}
		})
	}
}

func TestStatusBadges(t *testing.T) {
	_, doc := render(t, ConnectorsList(connectorsProps(signedIn("connectors"), "x")))
	want := map[string]string{
		"ready-one": "ready", "restarting": "restarting (attempt 3)", "failed": "failed", "off": "disabled",
		"busy": "installing", "shared": "not running",
	}
	for name, label := range want {
		row := doc.Find(fmt.Sprintf(`[data-connector=%q]`, name))
		if got := row.Find(`[data-testid="connector-status"]`).Text(); got != label {
			t.Errorf("%s badge = %q; want %q", name, got, label)
		}
	}
	if got := doc.Find(`[data-connector="failed"] [data-testid="connector-error"]`).Text(); got != "command not found: x" {
		t.Errorf("failed error = %q", got)
	}
	if n := doc.Find(`[data-connector="shared"] [data-testid="connector-deactivate"]`).Length(); n != 0 {
		t.Errorf("shared row deactivate buttons = %d; want 0", n)
	}
	if n := doc.Find(`[data-testid="connector-deactivate"]`).Length(); n != 5 {
		t.Errorf("deactivate buttons = %d; want one per own connector (5)", n)
	}
}

func TestSecretFieldsAreNeverPrefilled(t *testing.T) {
	shell := signedIn("shared-connectors")
	for _, c := range []templ.Component{ConnectorForm(formProps(shell, "x", 0)), MarketplacePage(marketplaceProps(shell, "x"))} {
		_, doc := render(t, c)
		secrets := doc.Find(`input[type="password"]`)
		if secrets.Length() != 2 {
			t.Fatalf("password inputs = %d; want 2", secrets.Length())
		}
		secrets.Each(func(_ int, s *goquery.Selection) {
			if _, has := s.Attr("value"); has {
				t.Errorf("secret %s has a value attribute", s.AttrOr("name", ""))
			}
			if s.AttrOr("autocomplete", "") != "off" {
				t.Errorf("secret %s autocomplete = %q; want off", s.AttrOr("name", ""), s.AttrOr("autocomplete", ""))
			}
		})
		if _, req := doc.Find(`input[name="secret.OLD"]`).Attr("required"); req {
			t.Error("a stored secret is required; want blank to keep it")
		}
		if got := byTestID(doc, "secret-stored").Text(); !strings.Contains(got, "leave blank to keep") {
			t.Errorf("stored hint = %q", got)
		}
	}
}

func TestSharedConnectorsActions(t *testing.T) {
	_, doc := render(t, SharedConnectorsList(sharedProps(signedIn("shared-connectors"), "x")))
	list := doc.Find("#shared-connectors")
	if got := list.AttrOr("hx-trigger", ""); got != "connectors-changed from:body" || list.AttrOr("hx-get", "") != "/admin/connectors/list" {
		t.Errorf("list reload = %q from %q", got, list.AttrOr("hx-get", ""))
	}
	row := doc.Find(`[data-connector="ready-one"]`)
	del := row.Find(`[data-testid="connector-delete"]`).Closest("form")
	if got := del.AttrOr("hx-confirm", ""); got != "Delete ready-one? Its settings, secrets and grants are removed." {
		t.Errorf("delete confirm = %q", got)
	}
	assertForm(t, del, "/admin/connectors/1/delete", "#shared-connectors")
	assertForm(t, row.Find(`[data-testid="connector-disable"]`).Closest("form"), "/admin/connectors/1/disable", "#shared-connectors")
	enable := doc.Find(`[data-connector="off"] [data-testid="connector-enable"]`).Closest("form")
	if enable.AttrOr("hx-post", "") != "/admin/connectors/4/enable" || enable.AttrOr("hx-target", "") != "#connector-panel" {
		t.Errorf("enable form posts %q into %q", enable.AttrOr("hx-post", ""), enable.AttrOr("hx-target", ""))
	}
	if n := row.Find(`[data-testid="grant"]`).Length(); n != 3 {
		t.Errorf("grants = %d; want 3", n)
	}
	assertForm(t, row.Find(`[data-testid="grant-revoke"]`).First().Closest("form"), "/admin/connectors/1/grants/1/revoke", "#shared-connectors")
}

func TestConnectorPagesEmbedTheirPartials(t *testing.T) {
	shell := signedIn("connectors")
	tests := []struct {
		name          string
		page, partial templ.Component
		selector      string
	}{
		{"connectors list", ConnectorsPage(connectorsProps(shell, "x")), ConnectorsList(connectorsProps(shell, "x")), "#my-connectors"},
		{"shared connectors list", SharedConnectorsPage(sharedProps(shell, "x")), SharedConnectorsList(sharedProps(shell, "x")), "#shared-connectors"},
		{"install progress", InstallPage(installProps(shell, "x", InstallRunning)), InstallProgress(installProps(shell, "x", InstallRunning)), "#install-42"},
		{"connector form", ConnectorFormPage(formProps(shell, "x", 0)), ConnectorForm(formProps(shell, "x", 0)), "#connector-panel form"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, page := render(t, tt.page)
			_, part := render(t, tt.partial)
			got, _ := goquery.OuterHtml(page.Find(tt.selector))
			sel := tt.selector
			if strings.HasPrefix(sel, "#connector-panel ") {
				sel = strings.TrimPrefix(sel, "#connector-panel ")
			}
			want, _ := goquery.OuterHtml(part.Find(sel))
			if got == "" || got != want {
				t.Errorf("page's %s differs from the partial:\n got %s\nwant %s", tt.selector, got, want)
			}
		})
	}
}

func TestTestConnectionButtons(t *testing.T) {
	shell := signedIn("shared-connectors")
	for _, tc := range []struct {
		name         string
		c            templ.Component
		form, action string
		area         string
	}{
		{"add form", ConnectorForm(formProps(shell, "x", 0)), `[data-testid="connector-form"]`, "/admin/connectors/test", "connector-test-result"},
		{"settings form", ConnectorForm(formProps(shell, "x", 7)), `[data-testid="connector-form"]`, "/admin/connectors/test", "connector-test-result"},
		{"marketplace", MarketplacePage(marketplaceProps(shell, "x")), `[data-catalog="echo"] [data-testid="activate-form"]`, "/connectors/test", "activate-echo-test-result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, doc := render(t, tc.c)
			form := doc.Find(tc.form)
			b := form.Find(`[data-testid="test-connection"]`)
			if b.Length() != 1 {
				t.Fatalf("test buttons in the form = %d; want 1", b.Length())
			}
			want := map[string]string{"type": "button", "hx-post": tc.action, "hx-include": "closest form", "hx-target": "#" + tc.area, "hx-swap": "innerHTML"}
			for k, v := range want {
				if got := b.AttrOr(k, ""); got != v {
					t.Errorf("%s = %q; want %q", k, got, v)
				}
			}
			if form.Find("#"+tc.area).Length() != 1 {
				t.Errorf("no result area #%s in the form", tc.area)
			}
			if form.Find(`button[type="submit"]`).Length() != 1 {
				t.Error("the form lost its submit button")
			}
		})
	}
	_, market := render(t, MarketplacePage(marketplaceProps(shell, "x")))
	if n := byTestID(market, "test-connection").Length(); n != 1 {
		t.Errorf("marketplace test buttons = %d; want one, for the entry that can be activated", n)
	}
	_, add := render(t, ConnectorForm(formProps(shell, "x", 0)))
	_, edit := render(t, ConnectorForm(formProps(shell, "x", 7)))
	if add.Find(`input[name="id"]`).Length() != 0 || edit.Find(`input[type="hidden"][name="id"]`).AttrOr("value", "") != "7" {
		t.Error("want the hidden id in the settings form only")
	}
}

func TestTestConnectionResult(t *testing.T) {
	for _, tc := range []struct {
		p    TestConnectionProps
		ok   string
		text string
	}{
		{TestConnectionProps{Tools: []string{"fetch", "search"}}, "true", "Connected: 2 tools: fetch, search"},
		{TestConnectionProps{Tools: []string{"search"}}, "true", "Connected: 1 tool: search"},
		{TestConnectionProps{}, "true", "Connected: no tools"},
		{TestConnectionProps{Error: "auth failed: HTTP 401 from https://x.example/mcp"}, "false", "Did not connect: auth failed: HTTP 401 from https://x.example/mcp"},
	} {
		_, doc := render(t, TestConnectionResult(tc.p))
		res := byTestID(doc, "test-connection-result")
		if got := strings.Join(strings.Fields(res.Text()), " "); got != tc.text || res.AttrOr("data-ok", "") != tc.ok {
			t.Errorf("got %q (ok %s); want %q (ok %s)", got, res.AttrOr("data-ok", ""), tc.text, tc.ok)
		}
	}
}
