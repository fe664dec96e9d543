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

{{- define "genericjob-controller.metricsPortName" -}}
{{- if .Values.metrics.secure }}https{{ else }}http{{ end }}
{{- end }}

{{/*
What the controller does in the namespaces it watches: manifests/rbac.yaml's ClusterRole rules (the
reasons are there), granted cluster-wide by a ClusterRole or per namespace by Roles. A test checks
that this list and manifests/rbac.yaml agree.
*/}}
{{- define "genericjob-controller.rules" -}}
- apiGroups: ["batch.tensorstack.dev"]
  resources: ["genericjobs"]
  verbs: ["list", "watch"]
- apiGroups: ["batch.tensorstack.dev"]
  resources: ["genericjobs/status"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "create", "delete"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["list", "watch", "create", "delete"]
- apiGroups: ["scheduler.tensorstack.dev"]
  resources: ["podgroups"]
  verbs: ["list", "watch", "create", "delete"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
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
