package seal

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestGenerateKey(t *testing.T) {
	t.Run("id is derived from the secret", func(t *testing.T) {
		secret := bytes.Repeat([]byte{0xab}, keySize)
		k, err := GenerateKey(bytes.NewReader(secret))
		if err != nil {
			t.Fatalf("GenerateKey: %v", err)
		}
		sum := sha256.Sum256(append([]byte("patchbay-seal-key-id\x00"), secret...))
		if want := hex.EncodeToString(sum[:])[:16]; k.ID != want {
			t.Fatalf("ID = %q; want %q", k.ID, want)
		}
		if !bytes.Equal(k.Secret[:], secret) {
			t.Fatalf("Secret differs from the bytes read")
		}
	})
	t.Run("nil reader uses crypto/rand", func(t *testing.T) {
		a, err := GenerateKey(nil)
		if err != nil {
			t.Fatalf("GenerateKey: %v", err)
		}
		b, err := GenerateKey(nil)
		if err != nil {
			t.Fatalf("GenerateKey: %v", err)
		}
		if a.Secret == b.Secret {
			t.Fatalf("two generated keys are equal; want different")
		}
		if !validKeyID(a.ID) {
			t.Fatalf("ID = %q; want 16 lowercase hex characters", a.ID)
		}
	})
	t.Run("failing reader is an error", func(t *testing.T) {
		if _, err := GenerateKey(failingReader{}); err == nil {
			t.Fatalf("GenerateKey err = nil; want an error")
		}
	})
	t.Run("short reader is an error", func(t *testing.T) {
		if _, err := GenerateKey(bytes.NewReader(make([]byte, keySize-1))); err == nil {
			t.Fatalf("GenerateKey err = nil; want an error")
		}
	})
}

func TestKeyFromBase64(t *testing.T) {
	// 0xfb 0xff bytes make the standard and URL alphabets differ.
	k := testKey(t, 0xfb)
	valid := []struct {
		name string
		in   string
	}{
		{"standard padded (what Base64 returns)", k.Base64()},
		{"standard unpadded", base64.RawStdEncoding.EncodeToString(k.Secret[:])},
		{"URL padded", base64.URLEncoding.EncodeToString(k.Secret[:])},
		{"URL unpadded", base64.RawURLEncoding.EncodeToString(k.Secret[:])},
		{"surrounding whitespace ignored", "  " + k.Base64() + "\n"},
	}
	for _, tt := range valid {
		t.Run("accepts "+tt.name, func(t *testing.T) {
			got, err := KeyFromBase64(tt.in)
			if err != nil {
				t.Fatalf("KeyFromBase64: %v", err)
			}
			if got.Secret != k.Secret || got.ID != k.ID {
				t.Fatalf("KeyFromBase64 = %v; want %v", got, k)
			}
		})
	}

	invalid := []struct {
		name string
		in   string
	}{
		{"empty string", ""},
		{"16 bytes", base64.StdEncoding.EncodeToString(make([]byte, 16))},
		{"31 bytes", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 31))},
		{"33 bytes", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 33))},
		{"64 bytes", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 64))},
		{"not base64", "this-is-not-base64-at-all!!"},
		{"mixed alphabets", strings.Replace(base64.URLEncoding.EncodeToString(k.Secret[:]), "_", "/", 1)},
		{"hex instead of base64", hex.EncodeToString(k.Secret[:])},
	}
	for _, tt := range invalid {
		t.Run("rejects "+tt.name, func(t *testing.T) {
			got, err := KeyFromBase64(tt.in)
			if err == nil {
				t.Fatalf("KeyFromBase64 = %v; want an error", got)
			}
			if !strings.HasPrefix(err.Error(), "seal: ") {
				t.Fatalf("error %q; want a \"seal: \" prefix", err)
			}
			if len(tt.in) >= 8 && strings.Contains(err.Error(), tt.in) {
				t.Fatalf("error %q echoes the key material", err)
			}
		})
	}
}

func TestKeyBase64RoundTrip(t *testing.T) {
	for _, fill := range []byte{0, 1, 0x7f, 0xfb, 0xff} {
		t.Run(fmt.Sprintf("secret of %#x bytes survives Base64 and back", fill), func(t *testing.T) {
			k := testKey(t, fill)
			got, err := KeyFromBase64(k.Base64())
			if err != nil {
				t.Fatalf("KeyFromBase64: %v", err)
			}
			if got.Secret != k.Secret || got.ID != k.ID {
				t.Fatalf("round trip = %v; want %v", got, k)
			}
		})
	}
}

func TestKeyNeverFormatsItsSecret(t *testing.T) {
	k := testKey(t, 0xfb)
	r := NewKeyring(k, testKey(t, 2))
	leaks := []string{
		k.Base64(),
		hex.EncodeToString(k.Secret[:]),
		fmt.Sprint(k.Secret[:4]), // "[251 251 251 251]"
		fmt.Sprintf("%x", k.Secret[:4]),
		"251 251",
		"0xfb",
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("keys", "key", k, "ring", r)
	outputs := map[string]string{"slog JSON": logged.String()}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%X", "%q"} {
		outputs["Key "+verb] = fmt.Sprintf(verb, k)
		outputs["*Key "+verb] = fmt.Sprintf(verb, &k)
		outputs["[]Key "+verb] = fmt.Sprintf(verb, []Key{k})
		outputs["*Keyring "+verb] = fmt.Sprintf(verb, r)
		outputs["struct holding a Keyring "+verb] = fmt.Sprintf(verb, struct{ R *Keyring }{r})
	}
	for name, out := range outputs {
		t.Run(name+" shows ids only", func(t *testing.T) {
			for _, leak := range leaks {
				if strings.Contains(out, leak) {
					t.Fatalf("output %q contains secret material %q", out, leak)
				}
			}
			if !strings.Contains(out, k.ID) {
				t.Fatalf("output %q; want it to name key %s", out, k.ID)
			}
		})
	}
}
