package seal

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSealOpenRoundTrip(t *testing.T) {
	r := NewKeyring(testKey(t, 1))
	tests := []struct {
		name      string
		plaintext []byte
	}{
		{"empty plaintext", []byte{}},
		{"nil plaintext", nil},
		{"short text", []byte("hunter2")},
		{"binary with NUL and high bytes", []byte{0, 1, 0xff, 0xfe, 0}},
		{"dots and base64 characters", []byte("v1.abc.-_==")},
		{"64 KiB", bytes.Repeat([]byte("x"), 64<<10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sealed, err := r.Seal(tt.plaintext, testAAD, nil)
			if err != nil {
				t.Fatalf("Seal: %v", err)
			}
			got, err := r.Open(sealed, testAAD)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !bytes.Equal(got, tt.plaintext) {
				t.Fatalf("Open = %q; want %q", got, tt.plaintext)
			}
			if got == nil {
				t.Fatalf("Open = nil; want a non-nil slice")
			}
		})
	}
}

func TestSealFormat(t *testing.T) {
	k := testKey(t, 1)
	r := NewKeyring(k)
	sealed := mustSeal(t, r, "hunter2", testAAD)

	t.Run("starts with version and key id", func(t *testing.T) {
		if want := "v1." + k.ID + "."; !strings.HasPrefix(sealed, want) {
			t.Fatalf("sealed = %q; want prefix %q", sealed, want)
		}
	})
	t.Run("body is unpadded base64url of nonce, ciphertext and tag", func(t *testing.T) {
		body := sealed[strings.LastIndex(sealed, ".")+1:]
		raw, err := payloadEncoding.DecodeString(body)
		if err != nil {
			t.Fatalf("decode body: %v", err)
		}
		if got, want := len(raw), nonceSize+len("hunter2")+tagSize; got != want {
			t.Fatalf("payload length = %d; want %d", got, want)
		}
	})
	t.Run("does not contain the plaintext", func(t *testing.T) {
		if strings.Contains(sealed, "hunter2") {
			t.Fatalf("sealed = %q; contains the plaintext", sealed)
		}
	})
	t.Run("KeyIDOf returns the sealing key", func(t *testing.T) {
		got, err := r.KeyIDOf(sealed)
		if err != nil {
			t.Fatalf("KeyIDOf: %v", err)
		}
		if got != k.ID {
			t.Fatalf("KeyIDOf = %q; want %q", got, k.ID)
		}
	})
	t.Run("uses the given nonce source", func(t *testing.T) {
		nonce := bytes.Repeat([]byte{7}, nonceSize)
		a, err := r.Seal([]byte("x"), testAAD, bytes.NewReader(nonce))
		if err != nil {
			t.Fatalf("Seal: %v", err)
		}
		b, err := r.Seal([]byte("x"), testAAD, bytes.NewReader(nonce))
		if err != nil {
			t.Fatalf("Seal: %v", err)
		}
		if a != b {
			t.Fatalf("seals with the same nonce = %q, %q; want equal", a, b)
		}
	})
}

func TestSealUsesFreshNonce(t *testing.T) {
	r := NewKeyring(testKey(t, 1))
	t.Run("two seals of the same plaintext differ", func(t *testing.T) {
		a := mustSeal(t, r, "same secret", testAAD)
		b := mustSeal(t, r, "same secret", testAAD)
		if a == b {
			t.Fatalf("Seal twice = %q both times; want different values", a)
		}
	})
}

func TestOpenRejectsMovedCiphertext(t *testing.T) {
	r := NewKeyring(testKey(t, 1))
	from := AAD{Table: "integrations", Column: "api_token", RowID: 42}
	sealed := mustSeal(t, r, "hunter2", from)
	tests := []struct {
		name string
		to   AAD
	}{
		{"another row id", AAD{Table: "integrations", Column: "api_token", RowID: 43}},
		{"negative row id", AAD{Table: "integrations", Column: "api_token", RowID: -42}},
		{"another column", AAD{Table: "integrations", Column: "webhook_secret", RowID: 42}},
		{"another table", AAD{Table: "users", Column: "api_token", RowID: 42}},
		{"boundary between table and column shifted", AAD{Table: "integrationsa", Column: "pi_token", RowID: 42}},
		{"table and column swapped", AAD{Table: "api_token", Column: "integrations", RowID: 42}},
		{"empty AAD", AAD{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Open(sealed, tt.to)
			if err == nil {
				t.Fatalf("Open = %q; want ErrDecrypt", got)
			}
			checkDecryptErr(t, err, sealed)
		})
	}
}

func TestKeyRotation(t *testing.T) {
	oldKey, newKey := testKey(t, 1), testKey(t, 2)
	before := NewKeyring(oldKey)
	after := NewKeyring(newKey, oldKey)
	oldSealed := mustSeal(t, before, "hunter2", testAAD)
	newSealed := mustSeal(t, after, "hunter2", testAAD)

	t.Run("opens a value sealed with an older key", func(t *testing.T) {
		got, err := after.Open(oldSealed, testAAD)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if string(got) != "hunter2" {
			t.Fatalf("Open = %q; want %q", got, "hunter2")
		}
	})
	t.Run("seals with the primary key", func(t *testing.T) {
		got, err := after.KeyIDOf(newSealed)
		if err != nil {
			t.Fatalf("KeyIDOf: %v", err)
		}
		if got != newKey.ID {
			t.Fatalf("KeyIDOf = %q; want primary %q", got, newKey.ID)
		}
	})
	t.Run("older key cannot open a value sealed with the newer", func(t *testing.T) {
		_, err := before.Open(newSealed, testAAD)
		checkDecryptErr(t, err, newSealed)
	})

	needs := []struct {
		name   string
		sealed string
		want   bool
	}{
		{"NeedsReseal is true for an older-key value", oldSealed, true},
		{"NeedsReseal is false for a primary-key value", newSealed, false},
		{"NeedsReseal is true for an unknown-key value", mustSeal(t, NewKeyring(testKey(t, 3)), "x", testAAD), true},
		{"NeedsReseal is false for an unparsable value", "garbage", false},
		{"NeedsReseal is false for an empty value", "", false},
	}
	for _, tt := range needs {
		t.Run(tt.name, func(t *testing.T) {
			if got := after.NeedsReseal(tt.sealed); got != tt.want {
				t.Fatalf("NeedsReseal = %v; want %v", got, tt.want)
			}
		})
	}

	t.Run("resealing moves a value to the primary key", func(t *testing.T) {
		plain, err := after.Open(oldSealed, testAAD)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		resealed := mustSeal(t, after, string(plain), testAAD)
		if after.NeedsReseal(resealed) {
			t.Fatalf("NeedsReseal(resealed) = true; want false")
		}
	})
}

func TestOpenUnknownKey(t *testing.T) {
	sealed := mustSeal(t, NewKeyring(testKey(t, 9)), "hunter2", testAAD)
	r := NewKeyring(testKey(t, 1), testKey(t, 2))
	t.Run("value sealed with a key not in the ring fails", func(t *testing.T) {
		got, err := r.Open(sealed, testAAD)
		if err == nil {
			t.Fatalf("Open = %q; want ErrDecrypt", got)
		}
		checkDecryptErr(t, err, sealed)
	})
	t.Run("key id swapped for one in the ring fails", func(t *testing.T) {
		swapped := strings.Replace(sealed, testKey(t, 9).ID, testKey(t, 2).ID, 1)
		_, err := r.Open(swapped, testAAD)
		checkDecryptErr(t, err, swapped)
	})
}

func TestOpenRejectsMalformed(t *testing.T) {
	k := testKey(t, 1)
	r := NewKeyring(k)
	valid := mustSeal(t, r, "hunter2", testAAD)
	body := valid[len("v1."+k.ID+"."):]
	tests := []struct {
		name   string
		sealed string
	}{
		{"empty string", ""},
		{"garbage", "this is not a sealed value"},
		{"only dots", ".."},
		{"version only", "v1"},
		{"version and key id only", "v1." + k.ID},
		{"empty body", "v1." + k.ID + "."},
		{"wrong version v2", "v2." + k.ID + "." + body},
		{"wrong version V1", "V1." + k.ID + "." + body},
		{"missing version", k.ID + "." + body},
		{"leading whitespace", " " + valid},
		{"trailing newline", valid + "\n"},
		{"newline inside body", "v1." + k.ID + "." + body[:10] + "\n" + body[10:]},
		{"extra dot field", valid + ".x"},
		{"uppercase key id", "v1." + strings.ToUpper(k.ID) + "." + body},
		{"short key id", "v1." + k.ID[:15] + "." + body},
		{"standard base64 characters", "v1." + k.ID + "." + strings.NewReplacer("-", "+", "_", "/").Replace(body) + "+/"},
		{"padded base64", valid + "=="},
		{"body shorter than nonce and tag", "v1." + k.ID + "." + payloadEncoding.EncodeToString(make([]byte, nonceSize+tagSize-1))},
		{"all-zero body of minimum length", "v1." + k.ID + "." + payloadEncoding.EncodeToString(make([]byte, nonceSize+tagSize))},
		{"NUL bytes", "v1.\x00\x00\x00"},
		{"invalid UTF-8", "v1.\xff\xfe." + body},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Open(tt.sealed, testAAD)
			if err == nil {
				t.Fatalf("Open = %q; want ErrDecrypt", got)
			}
			checkDecryptErr(t, err, tt.sealed)
		})
	}
}

func TestOpenRejectsTamperedByte(t *testing.T) {
	r := NewKeyring(testKey(t, 1), testKey(t, 2))
	// Several lengths, so the last base64 character carries 0, 2 or 4
	// padding bits; flipping those must fail too.
	for _, plaintext := range []string{"", "a", "ab", "hunter2"} {
		sealed := mustSeal(t, r, plaintext, testAAD)
		t.Run(fmt.Sprintf("any byte flipped fails/%d-byte plaintext", len(plaintext)), func(t *testing.T) {
			for i := 0; i < len(sealed); i++ {
				for _, mask := range []byte{0x01, 0x02, 0x20, 0x80} {
					b := []byte(sealed)
					b[i] ^= mask
					got, err := r.Open(string(b), testAAD)
					if err == nil {
						t.Fatalf("Open with byte %d ^ %#x = %q; want ErrDecrypt", i, mask, got)
					}
					checkDecryptErr(t, err, string(b))
				}
			}
		})
	}
}

func TestOpenRejectsTruncation(t *testing.T) {
	r := NewKeyring(testKey(t, 1))
	sealed := mustSeal(t, r, "hunter2", testAAD)
	t.Run("every proper prefix fails", func(t *testing.T) {
		for n := 0; n < len(sealed); n++ {
			got, err := r.Open(sealed[:n], testAAD)
			if err == nil {
				t.Fatalf("Open(first %d bytes) = %q; want ErrDecrypt", n, got)
			}
			checkDecryptErr(t, err, sealed[:n])
		}
	})
	t.Run("every proper suffix fails", func(t *testing.T) {
		for n := 1; n <= len(sealed); n++ {
			_, err := r.Open(sealed[n:], testAAD)
			checkDecryptErr(t, err, sealed[n:])
		}
	})
}

func TestSealErrors(t *testing.T) {
	r := NewKeyring(testKey(t, 1))
	t.Run("failing random source is an error", func(t *testing.T) {
		got, err := r.Seal([]byte("hunter2"), testAAD, failingReader{})
		if err == nil {
			t.Fatalf("Seal = %q; want an error", got)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("Seal error %q echoes the plaintext", err)
		}
	})
	t.Run("short random source is an error", func(t *testing.T) {
		_, err := r.Seal([]byte("x"), testAAD, bytes.NewReader(make([]byte, nonceSize-1)))
		if err == nil {
			t.Fatalf("Seal err = nil; want an error")
		}
	})
	for _, aad := range []AAD{{Column: "c"}, {Table: "t"}, {}} {
		t.Run("AAD without table or column is an error", func(t *testing.T) {
			_, err := r.Seal([]byte("x"), aad, nil)
			if !errors.Is(err, errIncompleteAAD) {
				t.Fatalf("Seal(%+v) err = %v; want %v", aad, err, errIncompleteAAD)
			}
		})
	}
}

func TestEmptyKeyring(t *testing.T) {
	sealed := mustSeal(t, NewKeyring(testKey(t, 1)), "x", testAAD)
	for name, r := range map[string]*Keyring{"nil keyring": nil, "zero keyring": {}} {
		t.Run(name+" cannot seal", func(t *testing.T) {
			if _, err := r.Seal([]byte("x"), testAAD, nil); !errors.Is(err, errNoKeys) {
				t.Fatalf("Seal err = %v; want %v", err, errNoKeys)
			}
		})
		t.Run(name+" cannot open", func(t *testing.T) {
			_, err := r.Open(sealed, testAAD)
			checkDecryptErr(t, err, sealed)
		})
		t.Run(name+" has no keys", func(t *testing.T) {
			if got := r.Keys(); len(got) != 0 {
				t.Fatalf("Keys() = %v; want none", got)
			}
			if got := r.Primary(); got.ID != "" {
				t.Fatalf("Primary() = %v; want the zero Key", got)
			}
			if got := r.Fingerprint("x"); got != "" {
				t.Fatalf("Fingerprint = %q; want empty", got)
			}
		})
		t.Run(name+" still parses", func(t *testing.T) {
			if _, err := r.KeyIDOf(sealed); err != nil {
				t.Fatalf("KeyIDOf: %v", err)
			}
			if !r.NeedsReseal(sealed) {
				t.Fatalf("NeedsReseal = false; want true (no primary)")
			}
		})
	}
}

func TestKeyIDOfRejectsMalformed(t *testing.T) {
	r := NewKeyring(testKey(t, 1))
	for _, s := range []string{"", "garbage", "v2.0123456789abcdef.AAAA", "v1.0123456789abcdef.AAAA"} {
		t.Run("malformed value is an error wrapping ErrDecrypt", func(t *testing.T) {
			got, err := r.KeyIDOf(s)
			if err == nil {
				t.Fatalf("KeyIDOf(%q) = %q; want an error", s, got)
			}
			checkDecryptErr(t, err, s)
		})
	}
}

func TestNewKeyring(t *testing.T) {
	a, b, c := testKey(t, 1), testKey(t, 2), testKey(t, 3)

	t.Run("Keys lists primary first then older keys in order", func(t *testing.T) {
		got := NewKeyring(b, c, a).Keys()
		want := []Key{b, c, a}
		if len(got) != len(want) {
			t.Fatalf("Keys() has %d keys; want %d", len(got), len(want))
		}
		for i := range want {
			if got[i].ID != want[i].ID || got[i].Secret != want[i].Secret {
				t.Fatalf("Keys()[%d] = %v; want %v", i, got[i], want[i])
			}
		}
	})
	t.Run("repeated keys are kept once", func(t *testing.T) {
		if got := len(NewKeyring(a, b, a, b).Keys()); got != 2 {
			t.Fatalf("len(Keys()) = %d; want 2", got)
		}
	})
	t.Run("Keys returns a copy", func(t *testing.T) {
		r := NewKeyring(a)
		r.Keys()[0].Secret[0] ^= 0xff
		if r.Primary().Secret != a.Secret {
			t.Fatalf("changing Keys() changed the keyring")
		}
	})
	t.Run("wrong or missing ids are re-derived from the secret", func(t *testing.T) {
		r := NewKeyring(Key{ID: "wrong", Secret: a.Secret}, Key{Secret: b.Secret})
		if got := r.Primary().ID; got != a.ID {
			t.Fatalf("Primary().ID = %q; want %q", got, a.ID)
		}
		if got := r.Keys()[1].ID; got != b.ID {
			t.Fatalf("Keys()[1].ID = %q; want %q", got, b.ID)
		}
		sealed := mustSeal(t, r, "x", testAAD)
		if id, _ := r.KeyIDOf(sealed); id != a.ID {
			t.Fatalf("KeyIDOf = %q; want %q", id, a.ID)
		}
	})
}
