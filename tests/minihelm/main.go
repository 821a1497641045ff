// minihelm renders a Helm chart the way `helm template` does, for tests on machines without a helm binary:
// Go text/template with the sprig function library (the engine and functions Helm itself uses) plus Helm's own
// include, tpl, required, toYaml, fromYaml, toJson; values from values.yaml deep-merged with -f files and --set
// (dotted keys, scalars only); .Chart from Chart.yaml (keys capitalised), .Release, .Capabilities. Every
// non-underscore file under templates/ ending in .yaml/.yml/.tpl... is rendered, sorted by name, each prefixed with
// "---\n# Source: <chart>/templates/<file>"; documents that render empty are dropped.
// Not covered: lookup, subcharts, hooks, `helm lint` rules. values.schema.json is checked by the caller (ajv).
//
// Usage: minihelm [-f values.yaml]... [--set a.b=c]... [--values-json] [--name RELEASE] [--namespace NS] CHART_DIR
// Built offline in GOPATH mode from Debian's golang-github-masterminds-sprig-dev and golang-gopkg-yaml.v3-dev.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"gopkg.in/yaml.v3"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// normalise turns yaml.v3's map[string]interface{} trees into JSON-compatible ones (they already are for string
// keys; this also converts any map[interface{}]interface{}).
func normalise(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, x := range t {
			t[k] = normalise(x)
		}
		return t
	case map[interface{}]interface{}:
		m := map[string]interface{}{}
		for k, x := range t {
			m[fmt.Sprint(k)] = normalise(x)
		}
		return m
	case []interface{}:
		for i, x := range t {
			t[i] = normalise(x)
		}
		return t
	}
	return v
}

// merge overlays src onto dst (maps merge recursively; anything else replaces), as Helm merges values files.
func merge(dst, src map[string]interface{}) map[string]interface{} {
	for k, v := range src {
		if sm, ok := v.(map[string]interface{}); ok {
			if dm, ok := dst[k].(map[string]interface{}); ok {
				dst[k] = merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

func readYAML(path string) map[string]interface{} {
	data, err := os.ReadFile(path)
	if err != nil {
		fail("%v", err)
	}
	out := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &out); err != nil {
		fail("%s: %v", path, err)
	}
	return normalise(out).(map[string]interface{})
}

// parseScalar gives --set values Helm's types: integers, booleans, null, else strings.
func parseScalar(s string) interface{} {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	return s
}

func setPath(values map[string]interface{}, expr string) {
	eq := strings.Index(expr, "=")
	if eq < 0 {
		fail("--set %s: expected KEY=VALUE", expr)
	}
	keys := strings.Split(expr[:eq], ".")
	m := values
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]interface{})
		if !ok {
			next = map[string]interface{}{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = parseScalar(expr[eq+1:])
}

func toYAML(v interface{}) string {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "minihelm: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	var files, sets multi
	flag.Var(&files, "f", "values file (repeatable)")
	flag.Var(&sets, "set", "KEY=VALUE override (repeatable)")
	valuesJSON := flag.Bool("values-json", false, "print the merged values as JSON instead of rendering")
	release := flag.String("name", "dlio", "release name")
	namespace := flag.String("namespace", "default", "release namespace")
	flag.Parse()
	if flag.NArg() != 1 {
		fail("usage: minihelm [-f values.yaml]... [--set k=v]... [--values-json] CHART_DIR")
	}
	chartDir := flag.Arg(0)

	values := readYAML(filepath.Join(chartDir, "values.yaml"))
	for _, f := range files {
		values = merge(values, readYAML(f))
	}
	for _, s := range sets {
		setPath(values, s)
	}
	if *valuesJSON {
		out, _ := json.MarshalIndent(values, "", "  ")
		fmt.Println(string(out))
		return
	}
	chartRaw := readYAML(filepath.Join(chartDir, "Chart.yaml"))
	chart := map[string]interface{}{}
	for k, v := range chartRaw {
		chart[strings.ToUpper(k[:1])+k[1:]] = v
	}
	ctx := map[string]interface{}{
		"Values":       values,
		"Chart":        chart,
		"Release":      map[string]interface{}{"Name": *release, "Namespace": *namespace, "Service": "Helm", "IsInstall": true, "IsUpgrade": false, "Revision": 1},
		"Capabilities": map[string]interface{}{"KubeVersion": map[string]interface{}{"Version": "v1.27.0", "Major": "1", "Minor": "27"}, "APIVersions": []string{"v1", "apps/v1", "batch/v1", "monitoring.coreos.com/v1"}},
		"Template":     map[string]interface{}{"BasePath": chart["Name"].(string) + "/templates"},
	}

	root := template.New("root")
	funcs := sprig.TxtFuncMap()
	funcs["toYaml"] = func(v interface{}) string { return toYAML(v) }
	funcs["fromYaml"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return normalise(m).(map[string]interface{})
	}
	funcs["toJson"] = func(v interface{}) string { b, _ := json.Marshal(v); return string(b) }
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil || v == "" {
			return nil, fmt.Errorf("%s", msg)
		}
		return v, nil
	}
	funcs["include"] = func(name string, data interface{}) (string, error) {
		var buf bytes.Buffer
		err := root.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		err = t.Execute(&buf, data)
		return buf.String(), err
	}
	root.Funcs(funcs).Option("missingkey=zero")

	tdir := filepath.Join(chartDir, "templates")
	entries, err := os.ReadDir(tdir)
	if err != nil {
		fail("%v", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(tdir, e.Name()))
		if err != nil {
			fail("%v", err)
		}
		if _, err := root.New(e.Name()).Parse(string(data)); err != nil {
			fail("%s: %v", e.Name(), err)
		}
		if !strings.HasPrefix(e.Name(), "_") && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, n, ctx); err != nil {
			fail("%v", err)
		}
		out := strings.ReplaceAll(buf.String(), "<no value>", "")
		if strings.TrimSpace(out) == "" {
			continue
		}
		fmt.Printf("---\n# Source: %s/templates/%s\n%s\n", chart["Name"], n, strings.TrimSpace(out))
	}
}
