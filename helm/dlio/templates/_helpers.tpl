{{/* Names, labels and the shared pieces of the pod specs. */}}
{{- define "dlio.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "dlio.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "dlio.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "dlio.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "dlio.tokenSecret" -}}
{{- .Values.token.existingSecret | default (printf "%s-token" (include "dlio.fullname" .)) -}}
{{- end -}}

{{- define "dlio.coordinatorAddress" -}}
{{ include "dlio.fullname" . }}-coordinator:{{ .Values.coordinator.port }}
{{- end -}}

{{/* The pod-level pieces every pod shares: the pod securityContext and the image pull secrets. */}}
{{- define "dlio.podCommon" -}}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Scheduling of one component: (dict "v" .Values.<component>) -> nodeSelector, tolerations, affinity. */}}
{{- define "dlio.scheduling" -}}
{{- with .v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The client side of the transport (agents, the submit Job): token, and TLS trusting the Secret's CA. */}}
{{- define "dlio.clientArgs" -}}
- --token-file=/etc/dlio/token/token
{{- if .Values.tls.enabled }}
- --tls-ca=/etc/dlio/tls/ca.crt
- --tls-server-name={{ include "dlio.fullname" . }}-coordinator
{{- end }}
{{- end -}}

{{/* Volumes and mounts of the transport secrets, and the writable /tmp of a read-only root file system. */}}
{{- define "dlio.secretMounts" -}}
- name: token
  mountPath: /etc/dlio/token
  readOnly: true
{{- if .Values.tls.enabled }}
- name: tls
  mountPath: /etc/dlio/tls
  readOnly: true
{{- end }}
- name: tmp
  mountPath: /tmp
{{- end -}}
{{- define "dlio.secretVolumes" -}}
- name: token
  secret:
    secretName: {{ include "dlio.tokenSecret" . }}
{{- if .Values.tls.enabled }}
- name: tls
  secret:
    secretName: {{ required "tls.existingSecret is required when tls.enabled is true" .Values.tls.existingSecret }}
{{- end }}
- name: tmp
  emptyDir: {}
{{- end -}}

{{/* The agent pod template, shared by the StatefulSet and the DaemonSet. */}}
{{- define "dlio.agentPod" -}}
metadata:
  labels:
    {{- include "dlio.labels" . | nindent 4 }}
    app.kubernetes.io/component: agent
spec:
  {{- include "dlio.podCommon" . | nindent 2 }}
  containers:
    - name: agent
      image: {{ include "dlio.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      command: ["dlio-agent"]
      args:
        - --coordinator={{ include "dlio.coordinatorAddress" . }}
        - --data-root=/data
        # Identity: the pod name is unique in the fleet; the node name makes num_hosts count Kubernetes nodes.
        - --name=$(POD_NAME)
        - --node-name=$(NODE_NAME)
        - --accelerators={{ .Values.agents.accelerators }}
        - --metrics-listen=0.0.0.0:{{ .Values.agents.metricsPort }}
        - --reconnect-window={{ .Values.agents.reconnectWindowSeconds }}
        - --log-level={{ .Values.agents.logLevel }}
        {{- include "dlio.clientArgs" . | nindent 8 }}
      env:
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: NODE_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
      ports:
        - name: metrics
          containerPort: {{ .Values.agents.metricsPort }}
          protocol: TCP
      readinessProbe:
        httpGet:
          path: /metrics
          port: metrics
        periodSeconds: 10
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      resources:
        {{- toYaml .Values.agents.resources | nindent 8 }}
      volumeMounts:
        - name: data
          mountPath: /data
        {{- include "dlio.secretMounts" . | nindent 8 }}
  volumes:
    - name: data
      {{- if eq .Values.data.type "hostPath" }}
      # Opt-in: refused where the baseline or restricted Pod Security profile is enforced (helm/README.md).
      hostPath:
        path: {{ .Values.data.hostPath }}
        type: DirectoryOrCreate
      {{- else }}
      persistentVolumeClaim:
        claimName: {{ required "data.claimName is required when data.type is persistentVolumeClaim" .Values.data.claimName }}
      {{- end }}
    {{- include "dlio.secretVolumes" . | nindent 4 }}
  {{- with .Values.agents.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.agents.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if .Values.agents.affinity }}
  affinity:
    {{- toYaml .Values.agents.affinity | nindent 4 }}
  {{- else if .Values.agents.onePerNode }}
  # One agent per node: no two agent pods of this release on the same kubernetes.io/hostname.
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- include "dlio.selector" (dict "root" . "component" "agent") | nindent 14 }}
  {{- end }}
{{- end -}}
