// Package test checks the Helm chart in deploy/helm/gpuwatch: every object
// `helm template` renders, with default values and with every option on,
// decodes strictly (unknown fields refused) into its Kubernetes API type
// (k8s.io/api, the NetworkPolicy's networking/v1 among them; the ServiceMonitor and PrometheusRule into
// prometheus-operator's monitoring/v1 types), and the chart's alert rules
// are docs/prometheus-alerts.yml. It is a module of its own so that the
// gpuwatch module does not depend on k8s.io. scripts/ci-helm.sh runs it
// with the helm it pins.
package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const chart = "../gpuwatch"

// allOn turns every option of values.yaml on.
var allOn = []string{"--values", "all-on.values.yaml"}

// helm is the helm binary: $HELM, else helm on PATH. Without one the
// test is skipped, unless GPUWATCH_REQUIRE_HELM=1 (CI) makes that a
// failure.
func helm(t *testing.T) string {
	t.Helper()
	h := os.Getenv("HELM")
	if h == "" {
		var err error
		if h, err = exec.LookPath("helm"); err != nil {
			if os.Getenv("GPUWATCH_REQUIRE_HELM") == "1" {
				t.Fatal("no helm (scripts/ci-helm.sh installs it)")
			}
			t.Skip("no helm: scripts/ci-helm.sh installs it")
		}
	}
	return h
}

// render runs helm template on the chart with args.
func render(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helm(t), append([]string{"template", "gw", chart, "--namespace", "monitoring"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// documents splits helm's output into its YAML documents (lines "---").
func documents(b []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), b...), []byte("\n---")) {
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// decodeStrict decodes one rendered object into its API type as the API
// server's strict field validation does (kubectl --validate=strict):
// the YAML is turned into JSON (a duplicate key refused) and decoded with sigs.k8s.io/json's
// UnmarshalStrict, which refuses unknown and duplicate fields and
// matches names case-sensitively (encoding/json would take hostPid for
// hostPID).
func decodeStrict(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 DaemonSet":
		obj = &appsv1.DaemonSet{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "networking.k8s.io/v1 NetworkPolicy":
		obj = &networkingv1.NetworkPolicy{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		obj = &monitoringv1.ServiceMonitor{}
	case "monitoring.coreos.com/v1 PrometheusRule":
		obj = &monitoringv1.PrometheusRule{}
	default:
		return nil, fmt.Errorf("an object of a kind this test does not know: %q %q", tm.APIVersion, tm.Kind)
	}
	js, err := yaml.YAMLToJSONStrict(doc) // a key twice is an error, not the last one
	if err != nil {
		return nil, err
	}
	strict, err := sigsjson.UnmarshalStrict(js, obj)
	if err == nil {
		err = errors.Join(strict...)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

// objects renders the chart and decodes every object strictly.
func objects(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, d := range documents(render(t, args...)) {
		obj, err := decodeStrict(d)
		if err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		kind := fmt.Sprintf("%T", obj)
		if _, dup := out[kind]; dup {
			t.Fatalf("two %s objects", kind)
		}
		out[kind] = obj
	}
	return out
}

func TestChartWithDefaultValues(t *testing.T) {
	objs := objects(t)
	if len(objs) != 3 {
		t.Fatalf("objects %v: want the DaemonSet, the Service and the NetworkPolicy only", slices.Collect(keys(objs)))
	}
	ds := objs["*v1.DaemonSet"].(*appsv1.DaemonSet)
	checkDaemonSet(t, ds)
	checkUnprivileged(t, ds)
	checkNetworkPolicy(t, objs["*v1.NetworkPolicy"].(*networkingv1.NetworkPolicy), ds, "monitoring")
	if ds.Spec.Template.Spec.RuntimeClassName != nil || ds.Spec.Template.Spec.HostNetwork {
		t.Errorf("runtime class %v, host network %v by default", ds.Spec.Template.Spec.RuntimeClassName, ds.Spec.Template.Spec.HostNetwork)
	}
	svc := objs["*v1.Service"].(*corev1.Service)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9400 || svc.Spec.Ports[0].TargetPort.StrVal != "metrics" {
		t.Errorf("service ports %+v", svc.Spec.Ports)
	}
	for k, v := range svc.Spec.Selector {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, which the DaemonSet's pods lack", k, v)
		}
	}
}

// checkDaemonSet: host PID, the host's /sys read-only where --sys-root
// says, only the capabilities it needs, resources set.
func checkDaemonSet(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	pod := ds.Spec.Template.Spec
	if !pod.HostPID {
		t.Error("no hostPID: serve would see only its own processes")
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !slices.Contains(c.Args, "serve") || !slices.Contains(c.Args, "--sys-root=/host/sys") || !slices.Contains(c.Args, "--listen=:9400") {
		t.Errorf("args %q", c.Args)
	}
	if len(c.VolumeMounts) < 1 || c.VolumeMounts[0].MountPath != "/host/sys" || !c.VolumeMounts[0].ReadOnly {
		t.Errorf("mounts %+v: want the host's /sys read-only at /host/sys", c.VolumeMounts)
	}
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("mount %+v is writable", m)
		}
	}
	if len(pod.Volumes) < 1 || pod.Volumes[0].HostPath == nil || pod.Volumes[0].HostPath.Path != "/sys" {
		t.Errorf("volumes %+v", pod.Volumes)
	}
	for _, v := range pod.Volumes[1:] {
		if v.HostPath != nil {
			t.Errorf("a second host path %+v", v)
		}
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Privileged != nil && *sc.Privileged || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("security context %+v", sc)
	}
	if psc := pod.SecurityContext; psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v: want seccompProfile RuntimeDefault", psc)
	}
	if sc != nil && sc.SeccompProfile != nil {
		t.Errorf("the container's seccomp profile %+v overrides the pod's", sc.SeccompProfile)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v", c.Resources)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.ReadinessProbe == nil {
		t.Errorf("ports %+v readiness %v", c.Ports, c.ReadinessProbe)
	}
}

func TestChartWithEveryOptionOn(t *testing.T) {
	objs := objects(t, allOn...)
	if len(objs) != 6 {
		t.Fatalf("objects %v", slices.Collect(keys(objs)))
	}
	ds := objs["*v1.DaemonSet"].(*appsv1.DaemonSet)
	checkDaemonSet(t, ds)
	checkJobProcessAccess(t, ds)
	checkAuth(t, ds, objs["*v1.ServiceMonitor"].(*monitoringv1.ServiceMonitor), true, true)
	checkNetworkPolicy(t, objs["*v1.NetworkPolicy"].(*networkingv1.NetworkPolicy), ds, "prometheus")
	pod := ds.Spec.Template.Spec
	if pod.RuntimeClassName == nil || *pod.RuntimeClassName != "nvidia" || !pod.HostNetwork || pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("runtime class %v host network %v dns %v", pod.RuntimeClassName, pod.HostNetwork, pod.DNSPolicy)
	}
	env := map[string]string{}
	for _, e := range pod.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["NVIDIA_VISIBLE_DEVICES"] != "all" || env["NVIDIA_DRIVER_CAPABILITIES"] != "utility" {
		t.Errorf("env %v", env)
	}
	if _, asks := pod.Containers[0].Resources.Limits["nvidia.com/gpu"]; asks {
		t.Error("the agent takes a GPU from the jobs")
	}
	if args := pod.Containers[0].Args; !slices.Contains(args, "wait_share_starved=0.3") {
		t.Errorf("extra args not passed: %q", args)
	}
	sm := objs["*v1.ServiceMonitor"].(*monitoringv1.ServiceMonitor)
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("service monitor %+v", sm.Spec)
	}
	pr := objs["*v1.PrometheusRule"].(*monitoringv1.PrometheusRule)
	checkRules(t, pr)
	// The dashboard for Grafana's sidecar: its label, the namespace it
	// watches, and deploy/grafana/gpuwatch.json as the data, whole.
	cm := objs["*v1.ConfigMap"].(*corev1.ConfigMap)
	dash, err := os.ReadFile(filepath.Join("..", "..", "grafana", "gpuwatch.json"))
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels["grafana_dashboard"] != "1" || cm.Namespace != "monitoring" || cm.Annotations["grafana_folder"] != "GPU" {
		t.Errorf("grafana dashboard ConfigMap %+v", cm.ObjectMeta)
	}
	if got := cm.Data["gpuwatch.json"]; got != strings.TrimSuffix(string(dash), "\n") {
		t.Errorf("the ConfigMap's gpuwatch.json is not deploy/grafana/gpuwatch.json (%d bytes, want %d)", len(got), len(dash))
	}
}

// TestChartDashboardIsTheGrafanaDashboard: files/grafana-dashboard.json,
// which the chart reads with .Files.Get, is deploy/grafana/gpuwatch.json
// byte for byte (cp deploy/grafana/gpuwatch.json
// deploy/helm/gpuwatch/files/grafana-dashboard.json).
func TestChartDashboardIsTheGrafanaDashboard(t *testing.T) {
	dash, err := os.ReadFile(filepath.Join("..", "..", "grafana", "gpuwatch.json"))
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile(filepath.Join(chart, "files", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dash, copied) {
		t.Fatal("deploy/helm/gpuwatch/files/grafana-dashboard.json differs from deploy/grafana/gpuwatch.json: cp deploy/grafana/gpuwatch.json deploy/helm/gpuwatch/files/grafana-dashboard.json")
	}
}

// checkRules: the PrometheusRule's groups are docs/prometheus-alerts.yml's,
// with the input-starved and input-bound alerts for 10 minutes.
func checkRules(t *testing.T, pr *monitoringv1.PrometheusRule) {
	t.Helper()
	docs, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "prometheus-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var want monitoringv1.PrometheusRuleSpec
	js, err := yaml.YAMLToJSONStrict(docs)
	if err != nil {
		t.Fatal(err)
	}
	if strict, err := sigsjson.UnmarshalStrict(js, &want); err != nil || len(strict) > 0 {
		err = errors.Join(append(strict, err)...)
		t.Fatalf("docs/prometheus-alerts.yml as a PrometheusRule's spec: %v", err)
	}
	got, _ := yaml.Marshal(pr.Spec)
	exp, _ := yaml.Marshal(want)
	if !bytes.Equal(got, exp) {
		t.Errorf("the chart's rules differ from docs/prometheus-alerts.yml:\n%s\nwant:\n%s", got, exp)
	}
	alerts := map[string]monitoringv1.Rule{}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts[r.Alert] = r
			}
		}
	}
	for _, name := range []string{"GPUStarvedTenMinutes", "NodeInputBoundTenMinutes"} {
		r, ok := alerts[name]
		if !ok || r.For == nil || *r.For != "10m" {
			t.Errorf("alert %s: %+v", name, r)
		}
	}
}

// TestChartRulesAreTheDocsRules: files/prometheus-alerts.yml, which the
// chart reads with .Files.Get, is docs/prometheus-alerts.yml byte for
// byte (cp docs/prometheus-alerts.yml deploy/helm/gpuwatch/files/).
func TestChartRulesAreTheDocsRules(t *testing.T) {
	docs, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "prometheus-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile(filepath.Join(chart, "files", "prometheus-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(docs, copied) {
		t.Fatal("deploy/helm/gpuwatch/files/prometheus-alerts.yml differs from docs/prometheus-alerts.yml: cp docs/prometheus-alerts.yml deploy/helm/gpuwatch/files/")
	}
}

// TestDecodingIsStrict: the decoding this test relies on refuses a field
// the API does not have (a misspelt hostPID) and an unknown kind, so a
// template's typo fails the test rather than being dropped by the API
// server.
func TestDecodingIsStrict(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: apps/v1\nkind: DaemonSet\nspec:\n  template:\n    spec:\n      hostPid: true\n",
		"apiVersion: v1\nkind: Service\nspec:\n  ports:\n    - port: 9400\n      targetport: metrics\n",
		"apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nspec:\n  groups:\n    - name: g\n      rules:\n        - alert: A\n          expr: up\n          four: 10m\n",
		"apiVersion: v1\nkind: Secret\ndata: {}\n",
		"apiVersion: v1\nkind: ConfigMap\ndatas: {}\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  name: b\n",
		"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nspec:\n  ingress:\n    - ports:\n        - port: 9400\n      form:\n        - namespaceSelector: {}\n",
		"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nspec:\n  podselector: {}\n",
	} {
		if _, err := decodeStrict([]byte(doc)); err == nil {
			t.Errorf("accepted:\n%s", doc)
		}
	}
	if _, err := decodeStrict([]byte("apiVersion: apps/v1\nkind: DaemonSet\nspec:\n  template:\n    spec:\n      hostPID: true\n")); err != nil {
		t.Errorf("a right one refused: %v", err)
	}
}

func keys(m map[string]any) iter.Seq[string] { return maps.Keys(m) }

// checkUnprivileged (issue 54, item 3): by default serve runs as uid and
// gid 65534, not root, with no capability added, and the pod's group owns
// the Secrets' files (fsGroup) so that it may read them.
func checkUnprivileged(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	psc, sc := ds.Spec.Template.Spec.SecurityContext, ds.Spec.Template.Spec.Containers[0].SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65534 ||
		psc.RunAsGroup == nil || *psc.RunAsGroup != 65534 || psc.FSGroup == nil || *psc.FSGroup != 65534 {
		t.Errorf("pod security context %+v: want uid and gid 65534, non-root", psc)
	}
	if sc.Capabilities == nil || len(sc.Capabilities.Add) != 0 {
		t.Errorf("capabilities %+v: want none added", sc.Capabilities)
	}
	if sc.RunAsUser != nil || sc.RunAsNonRoot != nil {
		t.Errorf("the container's user %v, non-root %v override the pod's", sc.RunAsUser, sc.RunAsNonRoot)
	}
}

// checkJobProcessAccess: jobProcessAccess adds SYS_PTRACE and
// DAC_READ_SEARCH, nothing else, as root (Kubernetes gives a non-root
// container no added capability).
func checkJobProcessAccess(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	psc, sc := ds.Spec.Template.Spec.SecurityContext, ds.Spec.Template.Spec.Containers[0].SecurityContext
	if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser != 0 || psc.RunAsNonRoot == nil || *psc.RunAsNonRoot {
		t.Errorf("pod security context %+v: want root", psc)
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"SYS_PTRACE", "DAC_READ_SEARCH"}) {
		t.Errorf("capabilities %+v: want SYS_PTRACE and DAC_READ_SEARCH added", sc.Capabilities)
	}
}

// checkNetworkPolicy: the policy selects the DaemonSet's pods, takes
// ingress only, and lets in only the namespace named ns, on the metrics
// port.
func checkNetworkPolicy(t *testing.T, np *networkingv1.NetworkPolicy, ds *appsv1.DaemonSet, ns string) {
	t.Helper()
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("the NetworkPolicy selects %s=%s, which the DaemonSet's pods lack", k, v)
		}
	}
	if len(np.Spec.PodSelector.MatchLabels) == 0 || len(np.Spec.PodSelector.MatchExpressions) != 0 {
		t.Errorf("pod selector %+v: want the DaemonSet's labels", np.Spec.PodSelector)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("policy types %v: want Ingress", np.Spec.PolicyTypes)
	}
	if len(np.Spec.Ingress) != 1 {
		t.Fatalf("ingress %+v: want one rule", np.Spec.Ingress)
	}
	in := np.Spec.Ingress[0]
	if len(in.Ports) != 1 || in.Ports[0].Port == nil || in.Ports[0].Port.IntValue() != 9400 || in.Ports[0].Protocol == nil || *in.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("ports %+v: want TCP 9400 only", in.Ports)
	}
	if len(in.From) != 1 || in.From[0].NamespaceSelector == nil || in.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != ns || in.From[0].IPBlock != nil {
		t.Errorf("from %+v: want the namespace %s", in.From, ns)
	}
	if ports := ds.Spec.Template.Spec.Containers[0].Ports; len(ports) != 1 || int(ports[0].ContainerPort) != in.Ports[0].Port.IntValue() {
		t.Errorf("the policy's port %v is not the container's %+v", in.Ports[0].Port, ports)
	}
}

// checkAuth: with a TLS Secret (tls) and a token Secret (token), serve
// gets --tls-cert/--tls-key and --token-file at the files of a read-only
// projected volume (0400), the probes ask / over HTTPS, and the
// ServiceMonitor scrapes https checking the CA and sends the token.
func checkAuth(t *testing.T, ds *appsv1.DaemonSet, sm *monitoringv1.ServiceMonitor, tls, token bool) {
	t.Helper()
	c := ds.Spec.Template.Spec.Containers[0]
	for flag, want := range map[string]bool{"--tls-cert=/etc/gpuwatch/auth/tls.crt": tls, "--tls-key=/etc/gpuwatch/auth/tls.key": tls, "--token-file=/etc/gpuwatch/auth/token": token} {
		if slices.Contains(c.Args, flag) != want {
			t.Errorf("args %q: %s %v", c.Args, flag, want)
		}
	}
	var files []string
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.Name != "auth" {
			continue
		}
		if v.Projected == nil || v.Projected.DefaultMode == nil || *v.Projected.DefaultMode != 0o400 {
			t.Errorf("auth volume %+v: want a projected volume, mode 0400", v)
			continue
		}
		for _, src := range v.Projected.Sources {
			for _, it := range src.Secret.Items {
				files = append(files, src.Secret.Name+"/"+it.Key+"="+it.Path)
			}
		}
	}
	var want []string
	if tls {
		want = append(want, "gpuwatch-tls/tls.crt=tls.crt", "gpuwatch-tls/tls.key=tls.key")
	}
	if token {
		want = append(want, "gpuwatch-token/token=token")
	}
	if !slices.Equal(files, want) {
		t.Errorf("the auth volume's files %q, want %q", files, want)
	}
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/" || (p.HTTPGet.Scheme == corev1.URISchemeHTTPS) != tls {
			t.Errorf("probe %+v: / over HTTPS %v", p, tls)
		}
	}
	if sm == nil {
		return
	}
	ep := sm.Spec.Endpoints[0]
	if https := ep.Scheme != nil && *ep.Scheme == monitoringv1.SchemeHTTPS; https != tls {
		t.Errorf("the ServiceMonitor's scheme %v, want HTTPS %v", ep.Scheme, tls)
	}
	if tls && (ep.TLSConfig == nil || ep.TLSConfig.CA.Secret == nil || ep.TLSConfig.CA.Secret.Name != "gpuwatch-tls" || ep.TLSConfig.CA.Secret.Key != "ca.crt" ||
		ep.TLSConfig.ServerName == nil || *ep.TLSConfig.ServerName != "gpuwatch.monitoring.svc") {
		t.Errorf("the ServiceMonitor's tlsConfig %+v", ep.TLSConfig)
	}
	a := ep.Authorization
	if sends := a != nil && a.Type == "Bearer" && a.Credentials != nil && a.Credentials.Name == "gpuwatch-token" && a.Credentials.Key == "token"; sends != token {
		t.Errorf("the ServiceMonitor's authorization %+v, want the token %v", a, token)
	}
}

// TestChartTokenWithoutTLSNorPolicy: a token alone (serve non-root: its
// group reads the Secret's files) adds --token-file and no TLS;
// networkPolicy.enabled=false renders no policy.
func TestChartTokenWithoutTLSNorPolicy(t *testing.T) {
	objs := objects(t, "--set", "token.secretName=gpuwatch-token,serviceMonitor.enabled=true,networkPolicy.enabled=false")
	if _, ok := objs["*v1.NetworkPolicy"]; ok {
		t.Error("a NetworkPolicy with networkPolicy.enabled=false")
	}
	ds := objs["*v1.DaemonSet"].(*appsv1.DaemonSet)
	checkDaemonSet(t, ds)
	checkUnprivileged(t, ds)
	checkAuth(t, ds, objs["*v1.ServiceMonitor"].(*monitoringv1.ServiceMonitor), false, true)
	checkAuth(t, objects(t)["*v1.DaemonSet"].(*appsv1.DaemonSet), nil, false, false)
}
