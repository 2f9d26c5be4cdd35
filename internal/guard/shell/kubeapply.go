package shell

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/overseer-dev/overseer/internal/lazyre"
	"go.yaml.in/yaml/v3"
)

// kubectl apply on a cluster on this machine (kind, k3d, minikube,
// Docker Desktop): notify when every object the manifests make is one an
// application of the project's makes, in a namespace of the project's,
// and none makes a pod that shares the host. A kind node is a privileged
// container, so a privileged or host-sharing pod reaches the host; an
// object of the cluster's own namespaces (kube-proxy runs privileged
// there) or a cluster-wide role or webhook leads to one.

// kubeApplyFlags are kubectl apply's flags without a value that take
// nothing from elsewhere and delete nothing; kubeApplyValueOpts take a
// value.
var kubeApplyFlags = setOf("--wait", "--validate", "--server-side", "--force-conflicts", "--overwrite",
	"--record", "--openapi-patch", "--dry-run")

var kubeApplyValueOpts = setOf("--field-manager", "--timeout", "-o", "--output", "--dry-run", "--validate",
	"--grace-period", "--show-managed-fields", "--allow-missing-template-keys", "--request-timeout",
	"-v", "--v")

// kubeAppKinds are the kinds of objects an application of the project's
// makes in its own namespace; Namespace makes that namespace. Any other
// kind (a cluster role or binding, a webhook, a custom resource definition,
// a persistent volume, a role binding that may grant a cluster role) keeps
// the rules' class.
var kubeAppKinds = setOf("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod",
	"Service", "ConfigMap", "Secret", "Ingress", "PersistentVolumeClaim", "ServiceAccount",
	"HorizontalPodAutoscaler", "PodDisruptionBudget", "NetworkPolicy", "Namespace")

// kustomizeFields are the fields of a kustomization that take nothing from
// elsewhere and run nothing: no remote resource (checked), no plugin
// (generators, transformers, validators), no helm chart inflation.
var kustomizeFields = setOf("apiVersion", "kind", "metadata", "resources", "bases", "components", "namespace",
	"namePrefix", "nameSuffix", "commonLabels", "labels", "commonAnnotations", "images", "replicas", "patches",
	"patchesStrategicMerge", "patchesJson6902", "configMapGenerator", "secretGenerator", "generatorOptions")

// kubeNamespaceText finds a namespace of the cluster's own named anywhere
// in a manifest or a patch.
var kubeNamespaceText = lazyre.New(`(?m)\bnamespace["']?\s*[:=]\s*["']?(kube-|local-path-storage\b)`)

// maxApplyFiles bounds the files kubeApplyPlain reads.
const maxApplyFiles = 512

// kubeApply is what kubeApplyPlain collects.
type kubeApply struct {
	a     *analyzer
	files int
	seen  map[string]bool
}

// kubeApplyPlain reports whether the manifests (-f files or directories)
// and kustomizations (-k directories) are the project's own files, not
// written by the command before it, and make only kubeAppKinds objects,
// none sharing the host, each in a namespace that is named (ns, the
// kustomization's or the object's own) and not the cluster's own.
func (a *analyzer) kubeApplyPlain(manifests, kustomize []string, recursive bool, ns string) bool {
	// ns (-n) is the namespace of the objects that name none; a
	// kustomization's namespace is every object's.
	if len(manifests)+len(kustomize) == 0 {
		return false
	}
	k := &kubeApply{a: a, seen: map[string]bool{}}
	for _, m := range manifests {
		real, ok := k.projectPath(m)
		if !ok {
			return false
		}
		if !k.manifests(real, recursive, ns) {
			return false
		}
	}
	for _, d := range kustomize {
		real, ok := k.projectPath(d)
		if !ok || !k.kustomization(real, "", ns, 0) {
			return false
		}
	}
	return true
}

// projectPath resolves p to a path inside the project that the command
// does not write before; "-" (standard input) and URLs are not.
func (k *kubeApply) projectPath(p string) (string, bool) {
	if p == "-" || strings.Contains(p, "://") || k.a.writtenHere(p) {
		return "", false
	}
	abs, ok := k.a.abs(p)
	if !ok || !path.IsAbs(abs) || k.a.env.Cwd == "" || !k.a.cwdKnown {
		return "", false
	}
	real, _, ok := k.a.realInProject(abs)
	return real, ok
}

// read reads a regular file of the project, within the bounds.
func (k *kubeApply) read(real string) ([]byte, bool) {
	k.files++
	if k.files > maxApplyFiles {
		return nil, false
	}
	return k.a.readRegular(fsName(real), 1<<20)
}

// manifests checks a manifest file, or a directory's .yaml, .yml and .json
// files (recursively with -R); ns is the namespace of objects that name
// none.
func (k *kubeApply) manifests(real string, recursive bool, ns string) bool {
	info, err := fs.Stat(k.a.fileSystem(), fsName(real))
	if err != nil {
		return false
	}
	if !info.IsDir() {
		b, ok := k.read(real)
		return ok && kubeObjectsPlain(b, "", ns)
	}
	entries, err := fs.ReadDir(k.a.fileSystem(), fsName(real))
	if err != nil {
		return false
	}
	for _, e := range entries {
		p := path.Join(real, e.Name())
		switch {
		case e.IsDir():
			if recursive {
				if r, _, ok := k.a.realInProject(p); !ok || !k.manifests(r, recursive, ns) {
					return false
				}
			}
		case strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml") || strings.HasSuffix(e.Name(), ".json"):
			r, _, ok := k.a.realInProject(p)
			if !ok {
				return false
			}
			if b, ok := k.read(r); !ok || !kubeObjectsPlain(b, "", ns) {
				return false
			}
		}
	}
	return true
}

// kustomization checks the kustomization in dir and what it takes in: its
// resources, bases and components (directories and files of the project,
// never a URL), its patches and its generators' files. ns is the
// namespace an outer kustomization gives every object, def that of the
// objects that name none (the command's -n).
func (k *kubeApply) kustomization(dir, ns, def string, depth int) bool {
	if depth > 16 {
		return false
	}
	if key := dir + "\x00" + ns; k.seen[key] {
		return true
	} else {
		k.seen[key] = true
	}
	var text []byte
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if r, _, ok := k.a.realInProject(path.Join(dir, n)); ok {
			if b, ok := k.read(r); ok {
				text = b
				break
			}
		}
	}
	if text == nil || kubeRisky(text) {
		return false
	}
	var doc map[string]any
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return false
	}
	for f := range doc {
		if !kustomizeFields[f] {
			return false
		}
	}
	if v, ok := doc["namespace"].(string); ok && v != "" {
		if ns == "" {
			ns = v // an outer kustomization's namespace wins
		}
	} else if doc["namespace"] != nil {
		return false
	}
	local := func(p string) (string, bool) {
		if strings.Contains(p, "://") || strings.Contains(p, "?ref=") || strings.HasPrefix(p, "github.com/") ||
			strings.HasPrefix(p, "git@") || path.IsAbs(p) {
			return "", false
		}
		r, _, ok := k.a.realInProject(path.Join(dir, p))
		return r, ok
	}
	for _, f := range []string{"resources", "bases", "components"} {
		list, ok := stringList(doc[f])
		if !ok {
			return false
		}
		for _, p := range list {
			r, ok := local(p)
			if !ok {
				return false
			}
			info, err := fs.Stat(k.a.fileSystem(), fsName(r))
			switch {
			case err != nil:
				return false
			case info.IsDir():
				if !k.kustomization(r, ns, def, depth+1) {
					return false
				}
			default:
				if b, ok := k.read(r); !ok || !kubeObjectsPlain(b, ns, def) {
					return false
				}
			}
		}
	}
	// Patches and generators' files: read for what they would add.
	var files []string
	if list, ok := stringList(doc["patchesStrategicMerge"]); ok {
		files = append(files, list...)
	} else {
		return false
	}
	for _, f := range []string{"patches", "patchesJson6902"} {
		items, _ := doc[f].([]any)
		if doc[f] != nil && items == nil {
			return false
		}
		for _, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				return false
			}
			if p, ok := m["path"].(string); ok {
				files = append(files, p)
			}
		}
	}
	for _, f := range []string{"configMapGenerator", "secretGenerator"} {
		items, _ := doc[f].([]any)
		if doc[f] != nil && items == nil {
			return false
		}
		for _, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				return false
			}
			for _, key := range []string{"files", "envs", "env"} {
				list, ok := stringList(m[key])
				if !ok {
					if s, isStr := m[key].(string); isStr {
						list = []string{s}
					} else {
						return false
					}
				}
				for _, p := range list {
					if _, v, kv := strings.Cut(p, "="); kv {
						p = v // key=path
					}
					if _, ok := local(p); !ok {
						return false
					}
				}
			}
		}
	}
	for _, p := range files {
		r, ok := local(p)
		if !ok {
			return false
		}
		b, ok := k.read(r)
		if !ok || kubeRisky(b) {
			return false
		}
	}
	return true
}

// stringList reads a YAML list of strings; nil is an empty list.
func stringList(v any) ([]string, bool) {
	if v == nil {
		return nil, true
	}
	items, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// kubeObjectsPlain reports whether a manifest file's objects are all
// kubeAppKinds objects in a named namespace (ns when given, else the
// object's own, else def) that is not the cluster's own, and nothing in it
// shares the host.
func kubeObjectsPlain(b []byte, ns, def string) bool {
	if kubeRisky(b) {
		return false
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	objects := 0
	for {
		var obj struct {
			Kind     string `yaml:"kind"`
			Metadata struct {
				Namespace string `yaml:"namespace"`
			} `yaml:"metadata"`
		}
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return false
		}
		if obj.Kind == "" {
			continue // an empty document
		}
		objects++
		if !kubeAppKinds[obj.Kind] {
			return false
		}
		if obj.Kind == "Namespace" {
			continue
		}
		on := obj.Metadata.Namespace
		switch {
		case ns != "":
			on = ns
		case on == "":
			on = def
		}
		if on == "" || kubeSystemNamespace(on) {
			return false
		}
	}
	return objects > 0
}

// kubeRisky reports whether a manifest, patch or kustomization shares the
// host or names a namespace of the cluster's own: in its text, or in its
// keys and strings as YAML decodes them ("host\x50ID" and JSON's
// "privil\u0065ged" are hostPID and privileged to kubectl; an inline
// patch is a string), or it adds every capability or one the text test
// does not find (ALL, CAP_SYS_ADMIN). Text that does not decode is risky.
func kubeRisky(b []byte) bool {
	if kubeHostAccess.Match(b) || kubeNamespaceText.Match(b) {
		return true
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return false
		}
		if err != nil || kubeRiskyValue(v, "") {
			return true
		}
	}
}

// kubeRiskyValue walks a decoded YAML value; key is the key it is under.
func kubeRiskyValue(v any, key string) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if kubeHostAccess.MatchString(k) || kubeRiskyValue(x, k) {
				return true
			}
		}
	case map[any]any:
		for k, x := range v {
			ks, ok := k.(string)
			if !ok || kubeHostAccess.MatchString(ks) || kubeRiskyValue(x, ks) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if kubeRiskyValue(x, key) {
				return true
			}
		}
	case string:
		if kubeHostAccess.MatchString(v) || kubeNamespaceText.MatchString(v) ||
			key == "namespace" && kubeSystemNamespace(v) {
			return true
		}
		if key == "add" {
			c := strings.ToUpper(strings.TrimSpace(v))
			if c == "ALL" || kubeHostAccess.MatchString(strings.TrimPrefix(c, "CAP_")) {
				return true
			}
		}
	}
	return false
}
