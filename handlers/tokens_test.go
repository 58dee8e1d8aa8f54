package handlers

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

func TestTokenRevokeIsOwnerOnly(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serverOpts{})
	ctx := context.Background()
	owner := ts.signIn(t, uma)
	other := ts.signIn(t, sam)
	admin := ts.signIn(t, ada)
	secret, tok, err := ts.db.CreateAPIToken(ctx, ts.user(t, uma).ID, "uma's script")
	if err != nil {
		t.Fatal(err)
	}
	bearer := hdr("Authorization", "Bearer "+secret)
	revoke := fmt.Sprintf("/tokens/%d/revoke", tok.ID)
	tokenWorks := func(t *testing.T) bool {
		t.Helper()
		return ts.newClient(t).whoAmI(t, bearer) == ts.person(t, uma).Email
	}
	if !tokenWorks(t) {
		t.Fatal("uma's token does not work before the test; want it to")
	}

	for _, tc := range []struct {
		name string
		c    *client
	}{{"another user", other}, {"an admin", admin}} {
		t.Run(tc.name+" gets 404 on the owner's token", func(t *testing.T) {
			wantStatus(t, tc.c.formPost(t, revoke, nil), http.StatusNotFound)
			wantStatus(t, tc.c.htmxPost(t, revoke, nil), http.StatusNotFound)
			r := tc.c.formPost(t, revoke, nil, jsonReq)
			wantStatus(t, r, http.StatusNotFound)
			if got := r.apiError(t).Code; got != "not_found" {
				t.Errorf("got code %q; want not_found", got)
			}
			if !tokenWorks(t) {
				t.Error("uma's token stopped working; want it untouched")
			}
		})
	}

	t.Run("the owner's token id and a missing id look the same", func(t *testing.T) {
		a := other.formPost(t, revoke, nil, jsonReq)
		b := other.formPost(t, fmt.Sprintf("/tokens/%d/revoke", tok.ID+1000), nil, jsonReq)
		if a.status != b.status || a.apiError(t) != b.apiError(t) {
			t.Errorf("got %d %+v for someone else's token and %d %+v for a missing one; want the same", a.status, a.apiError(t), b.status, b.apiError(t))
		}
	})

	t.Run("non-numeric ids are not found", func(t *testing.T) {
		for _, id := range []string{"abc", "0", "-1", "1e3", "0x1", "1.0", "%20" + fmt.Sprint(tok.ID), fmt.Sprint(tok.ID) + "x"} {
			r := owner.formPost(t, "/tokens/"+id+"/revoke", nil)
			if r.status != http.StatusNotFound {
				t.Errorf("id %q: got %d; want 404", id, r.status)
			}
		}
		if !tokenWorks(t) {
			t.Error("uma's token stopped working; want it untouched")
		}
	})

	t.Run("the owner can revoke it", func(t *testing.T) {
		r := owner.htmxPost(t, revoke, nil)
		wantStatus(t, r, http.StatusOK)
		if r.doc(t).Find(fmt.Sprintf(`[data-token-id="%d"]`, tok.ID)).Length() != 0 {
			t.Error("got the revoked token still listed; want it gone")
		}
		if tokenWorks(t) {
			t.Error("got the revoked token still working; want 401")
		}
		wantStatus(t, owner.formPost(t, revoke, nil), http.StatusNotFound)
	})
}
