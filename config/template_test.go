package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// commentedKey is a template line holding a commented-out setting:
// "  # budget: 800".
var commentedKey = regexp.MustCompile(`^(\s*)# ([a-z_]+:.*)$`)

// uncomment turns the template's commented-out settings into live ones.
func uncomment(t []byte) []byte {
	var out []string
	for _, line := range strings.Split(string(t), "\n") {
		if m := commentedKey.FindStringSubmatch(line); m != nil {
			line = m[1] + m[2]
		}
		out = append(out, line)
	}
	return []byte(strings.Join(out, "\n"))
}

// The template as written loads as the defaults, and with every setting
// uncommented it still loads as the defaults: the values it shows are the
// real ones.
func TestTemplateShowsTheDefaults(t *testing.T) {
	for name, data := range map[string][]byte{"as written": Template(), "uncommented": uncomment(Template())} {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, FileName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Load(root)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// %+v prints a nil and an empty list alike.
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", Default()) {
			t.Errorf("%s: loads as\n%+v\nwant the defaults\n%+v", name, got, Default())
		}
	}
}

// Every key of Config appears in the template, so a new setting cannot be
// forgotten there.
func TestTemplateHasEveryKey(t *testing.T) {
	var doc map[string]any
	if err := yaml.Unmarshal(uncomment(Template()), &doc); err != nil {
		t.Fatal(err)
	}
	var missing []string
	var walk func(typ reflect.Type, m map[string]any, prefix string)
	walk = func(typ reflect.Type, m map[string]any, prefix string) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			key := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if key == "" || key == "-" {
				continue
			}
			v, ok := m[key]
			if !ok {
				missing = append(missing, prefix+key)
				continue
			}
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(Duration{}) {
				sub, _ := v.(map[string]any)
				walk(f.Type, sub, prefix+key+".")
			}
		}
	}
	walk(reflect.TypeOf(Config{}), doc, "")
	if len(missing) > 0 {
		t.Errorf("template.yaml lacks %v", missing)
	}
}
