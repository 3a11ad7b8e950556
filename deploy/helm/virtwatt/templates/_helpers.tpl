{{/* The release's full name: the release name when it holds the chart's name. */}}
{{- define "virtwatt.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "virtwatt.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "virtwatt.labels" -}}
{{ include "virtwatt.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "virtwatt.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "virtwatt.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "virtwatt.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The seccomp profile's file below the kubelet's seccomp directory. */}}
{{- define "virtwatt.seccompProfile" -}}
virtwatt/virtwatt-host.json
{{- end -}}

{{/* The daemon container's seccompProfile (Localhost), or nothing (the pod's RuntimeDefault). */}}
{{- define "virtwatt.containerSeccomp" -}}
{{- if eq .Values.seccomp.profile "Localhost" }}
seccompProfile:
  type: Localhost
  localhostProfile: {{ include "virtwatt.seccompProfile" . }}
{{- else if ne .Values.seccomp.profile "RuntimeDefault" }}
{{- fail "seccomp.profile: Localhost or RuntimeDefault (never Unconfined)" }}
{{- end }}
{{- end -}}

{{/* The init container installing the profile, and its volume. */}}
{{- define "virtwatt.seccompInit" -}}
{{- if and (eq .Values.seccomp.profile "Localhost") .Values.seccomp.install }}
initContainers:
  - name: seccomp-profile
    image: {{ include "virtwatt.image" . }}
    imagePullPolicy: {{ .Values.image.pullPolicy }}
    command: ["cp", "/usr/share/virtwatt/seccomp/virtwatt-host.json", "/seccomp/virtwatt-host.json"]
    resources:
      requests:
        cpu: 10m
        memory: 16Mi
      limits:
        cpu: 100m
        memory: 32Mi
    securityContext:
      privileged: false
      runAsUser: 0
      runAsNonRoot: false
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities:
        drop: ["ALL"]
    volumeMounts:
      - name: seccomp-profiles
        mountPath: /seccomp
{{- end }}
{{- end -}}

{{- define "virtwatt.seccompVolume" -}}
{{- if and (eq .Values.seccomp.profile "Localhost") .Values.seccomp.install }}
- name: seccomp-profiles
  hostPath:
    path: {{ printf "%s/seccomp/virtwatt" (trimSuffix "/" .Values.seccomp.kubeletRootDir) }}
    type: DirectoryOrCreate
{{- end }}
{{- end -}}

{{/* Capabilities and the rest of the daemons' container securityContext. */}}
{{- define "virtwatt.securityContext" -}}
privileged: false
runAsUser: 0
runAsNonRoot: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
  add: ["BPF", "PERFMON", "DAC_READ_SEARCH", "SYS_PTRACE"]
{{- include "virtwatt.containerSeccomp" . }}
{{- end -}}

{{- define "virtwatt.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: http-metrics
  initialDelaySeconds: 10
  periodSeconds: 30
  timeoutSeconds: 5
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz
    port: http-metrics
  initialDelaySeconds: 5
  periodSeconds: 10
  timeoutSeconds: 5
{{- end -}}
