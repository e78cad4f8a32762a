package admission

// GuardName names the guard's policy and its binding.
const GuardName = "reserve-static-k8s-io"

// Guard is a ValidatingAdmissionPolicy and its binding that deny
// creating, through the API, a ValidatingWebhookConfiguration or a
// MutatingWebhookConfiguration whose name ends in StaticSuffix.
// kube-apiserver 1.36 and later refuse those names themselves while
// manifest-based admission is enabled (on by default from 1.37); on an
// older cluster, or one with the feature off, an object created under
// such a name now would clash with a static manifest of the same name
// later. KEP-5793 asks operators of such clusters to block them; this is
// the block, ready to apply (admissionregistration.k8s.io/v1 policies:
// Kubernetes 1.30 and later).
//
// No admission check can cover the other four kinds: kube-apiserver
// evaluates no policy or webhook defined through the API on admission
// policies and their bindings, so that none can lock them out. For those,
// the guard's own comment gives the command that lists what exists under
// a reserved name, to run before an upgrade.
const Guard = `# Denies creating a ValidatingWebhookConfiguration or a
# MutatingWebhookConfiguration named *` + StaticSuffix + ` through the API
# (KEP-5793), for clusters before Kubernetes 1.36. kube-apiserver applies
# no API-defined policy or webhook to admission policies and their
# bindings; before upgrading, list those under a reserved name with (a
# kind the cluster does not serve is passed over):
#   for r in validatingadmissionpolicies validatingadmissionpolicybindings mutatingadmissionpolicies mutatingadmissionpolicybindings; do kubectl get "$r" -o name 2>/dev/null; done | grep '\.static\.k8s\.io$'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: ` + GuardName + `
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["admissionregistration.k8s.io"]
      apiVersions: ["*"]
      operations: ["CREATE"]
      resources: ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"]
  validations:
  - expression: "!object.metadata.name.endsWith('` + StaticSuffix + `')"
    message: "names ending in ` + StaticSuffix + ` are reserved for manifest-based admission configuration (KEP-5793): kube-apiserver 1.36 and later load such objects from static manifest directories, never through the API"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: ` + GuardName + `
spec:
  policyName: ` + GuardName + `
  validationActions: [Deny]
`
