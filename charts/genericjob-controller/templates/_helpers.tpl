{{/* The release's base name: "genericjob-controller" for a release of that name (as in the README). */}}
{{- define "genericjob-controller.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "genericjob-controller.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Helm's standard labels, on every object's metadata (not on selectors or pod templates). */}}
{{- define "genericjob-controller.labels" -}}
app.kubernetes.io/name: {{ include "genericjob-controller.name" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The controller's pods. Fixed, as the kustomize install's: a Deployment's selector cannot change. */}}
{{- define "genericjob-controller.selectorLabels" -}}
app.kubernetes.io/name: {{ include "genericjob-controller.name" . }}
app.kubernetes.io/component: controller
{{- end }}

{{/* "true" when cert-manager issues the metrics certificate (only for secure metrics), else empty. */}}
{{- define "genericjob-controller.certManager" -}}
{{- if and .Values.metrics.secure .Values.metrics.certManager.enabled }}true{{ end }}
{{- end }}

{{- define "genericjob-controller.metricsPortName" -}}
{{- if .Values.metrics.secure }}https{{ else }}http{{ end }}
{{- end }}

{{/*
The objects of a file of manifests/ (files/ links to them), as a list of dicts.
*/}}
{{- define "genericjob-controller.manifests" -}}
{{- $objects := list }}
{{- range $doc := splitList "\n---" (.root.Files.Get .file) }}
{{- $obj := fromYaml $doc }}
{{- if $obj.kind }}
{{- $objects = append $objects $obj }}
{{- end }}
{{- end }}
{{- toYaml (dict "objects" $objects) }}
{{- end }}

{{/*
The controller's rules: the ClusterRole of manifests/rbac.yaml, read from it (files/rbac.yaml links to
it), so the chart grants exactly what the kustomize install grants. "namespaced": only the rules a Role
can grant, without the cluster-scoped TokenReview and SubjectAccessReview.
*/}}
{{- define "genericjob-controller.rules" -}}
{{- $rules := list }}
{{- range (include "genericjob-controller.manifests" (dict "root" .root "file" "files/rbac.yaml") | fromYaml).objects }}
{{- if eq .kind "ClusterRole" }}
{{- range .rules }}
{{- if not (and $.namespaced (or (has "authentication.k8s.io" .apiGroups) (has "authorization.k8s.io" .apiGroups))) }}
{{- $rules = append $rules . }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $rules }}
{{- end }}

{{/* Secure metrics' TokenReview and SubjectAccessReview: cluster-scoped whatever is watched. */}}
{{- define "genericjob-controller.metricsAuthRules" -}}
- apiGroups: ["authentication.k8s.io"]
  resources: ["tokenreviews"]
  verbs: ["create"]
- apiGroups: ["authorization.k8s.io"]
  resources: ["subjectaccessreviews"]
  verbs: ["create"]
{{- end }}

{{- define "genericjob-controller.subject" -}}
- kind: ServiceAccount
  name: {{ include "genericjob-controller.fullname" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/*
"true" when cert-manager issues the webhook's certificate (webhook.certManager.enabled, or, unset, the
metrics' switch metrics.certManager.enabled), else empty: the controller keeps its own certificate then.
*/}}
{{- define "genericjob-controller.webhookCertManager" -}}
{{- if .Values.webhook.enabled }}
{{- $chosen := .Values.webhook.certManager.enabled }}
{{- if kindIs "invalid" $chosen }}{{ $chosen = .Values.metrics.certManager.enabled }}{{ end }}
{{- if $chosen }}true{{ end }}
{{- end }}
{{- end }}

{{/* "true" when the controller makes, rotates and injects the webhook's certificate itself, else empty. */}}
{{- define "genericjob-controller.webhookSelfManaged" -}}
{{- if and .Values.webhook.enabled (not (include "genericjob-controller.webhookCertManager" .)) }}true{{ end }}
{{- end }}

{{/*
The webhooks' namespaceSelector: webhook.namespaceSelector, and with `namespaces` set, the watched
namespaces by the label the API server sets on every namespace (as overlays/namespaced).
*/}}
{{- define "genericjob-controller.webhookNamespaceSelector" -}}
{{- $selector := deepCopy .Values.webhook.namespaceSelector }}
{{- with .Values.namespaces }}
{{- $watched := dict "key" "kubernetes.io/metadata.name" "operator" "In" "values" . }}
{{- $_ := set $selector "matchExpressions" (append ($selector.matchExpressions | default list) $watched) }}
{{- end }}
{{- toYaml $selector }}
{{- end }}
