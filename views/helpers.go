package views

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/a-h/templ"

	"patchbay"
)

// htmxConfig turns off the HTMX features that break under our CSP or could
// keep a secret around: indicator styles are injected inline, the history
// cache would store pages in localStorage, and eval and script tags would
// run code from responses.
// Error responses (4xx/5xx) are swapped too: the server retargets them
// at the page's alert region, so a failed action always says why.
const htmxConfig = `{"includeIndicatorStyles":false,"historyCacheSize":0,"allowEval":false,"allowScriptTags":false,` +
	`"responseHandling":[{"code":"204","swap":false},{"code":"[23]..","swap":true},{"code":"[45]..","swap":true,"error":true}]}`

// csrfHeaders is the JSON for <body hx-headers>. It is marshalled rather
// than concatenated so that no token value can break out of the JSON, and
// templ then escapes it for the attribute.
func csrfHeaders(token string) (string, error) {
	return templ.JSONString(struct {
		Token string `json:"X-CSRF-Token"`
	}{token})
}

// pageTitle is the document title for a section title.
func pageTitle(title string) string {
	if title == "" {
		return "Patchbay"
	}
	return title + " · Patchbay"
}

// signInURL is the login link, carrying next when there is one. The login
// handler validates next; here it is only query-escaped.
func signInURL(next string) templ.SafeURL {
	if next == "" {
		return templ.URL("/auth/login")
	}
	return templ.URL("/auth/login?next=" + url.QueryEscape(next))
}

// userURL is a per-user action route such as /users/7/role.
func userURL(id int64, action string) string {
	return fmt.Sprintf("/users/%d/%s", id, action)
}

// tokenRevokeURL is the revoke route for one token.
func tokenRevokeURL(id int64) string {
	return fmt.Sprintf("/tokens/%d/revoke", id)
}

// itoa formats counts for display.
func itoa(n int) string { return strconv.Itoa(n) }

// roleOptions are the choices in a user's role select. The user's current
// role is kept even if it is missing from names, so that the select never
// silently shows, and on submit changes to, a different role.
func roleOptions(names []string, current string) []string {
	for _, n := range names {
		if n == current {
			return names
		}
	}
	if current == "" {
		return names
	}
	return append([]string{current}, names...)
}

// isAdminRole reports whether the role holds every capability by
// construction, whatever its capability rows say.
func isAdminRole(name string) bool { return name == patchbay.RoleAdmin }

// heldCapabilities filters a role's capabilities to the ones it holds.
func heldCapabilities(caps []CapabilityRow) []CapabilityRow {
	var held []CapabilityRow
	for _, c := range caps {
		if c.Held {
			held = append(held, c)
		}
	}
	return held
}

// orNever shows "Never" for an empty timestamp.
func orNever(s string) string {
	if s == "" {
		return "Never"
	}
	return s
}

// curlExample shows how to call the API with the new token. It refers to
// $PATCHBAY_TOKEN rather than the secret, so that the secret appears only
// in its readonly input and is not copied around with the example.
func curlExample(baseURL string) string {
	if baseURL == "" {
		baseURL = "$PATCHBAY_URL"
	}
	return `curl -H "Authorization: Bearer $PATCHBAY_TOKEN" ` + baseURL + "/api/me"
}

// tokensShell marks a page that shows a new secret as not for the HTMX
// history, even if the handler forgot to.
func tokensShell(p TokensProps) Shell {
	s := p.Shell
	if p.Created != nil {
		s.NoHistory = true
	}
	return s
}

// navItem is one link in the top nav.
type navItem struct {
	key, label, href string
}

// navItems lists the links the viewer may see, in display order.
func navItems(n Nav) []navItem {
	all := []struct {
		show bool
		item navItem
	}{
		{n.Connectors, navItem{"connectors", "Connectors", "/connectors"}},
		{n.Marketplace, navItem{"marketplace", "Marketplace", "/marketplace"}},
		{n.SharedConnectors, navItem{"shared-connectors", "Shared connectors", "/admin/connectors"}},
		{n.Users, navItem{"users", "Users", "/users"}},
		{n.Support, navItem{"support", "Support", "/support"}},
		{n.Tokens, navItem{"tokens", "Tokens", "/tokens"}},
	}
	var items []navItem
	for _, a := range all {
		if a.show {
			items = append(items, a.item)
		}
	}
	return items
}

// displayName names a user in prompts, falling back to the email when the
// provider gave no name.
func displayName(u UserRow) string {
	if u.Name != "" {
		return u.Name
	}
	return u.Email
}
