from estimator.pb import k8s_core_pb2 as _k8s_core_pb2
from estimator.pb import k8s_resource_pb2 as _k8s_resource_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Component(_message.Message):
    __slots__ = ("name", "replicaRequirements", "replicas")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REPLICAREQUIREMENTS_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    replicaRequirements: ComponentReplicaRequirements
    replicas: int
    def __init__(self, name: _Optional[str] = ..., replicaRequirements: _Optional[_Union[ComponentReplicaRequirements, _Mapping]] = ..., replicas: _Optional[int] = ...) -> None: ...

class ComponentReplicaRequirements(_message.Message):
    __slots__ = ("nodeClaim", "resourceRequest", "priorityClassName", "resourceRequestBytes")
    class ResourceRequestEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _k8s_resource_pb2.Quantity
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_k8s_resource_pb2.Quantity, _Mapping]] = ...) -> None: ...
    class ResourceRequestBytesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    NODECLAIM_FIELD_NUMBER: _ClassVar[int]
    RESOURCEREQUEST_FIELD_NUMBER: _ClassVar[int]
    PRIORITYCLASSNAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCEREQUESTBYTES_FIELD_NUMBER: _ClassVar[int]
    nodeClaim: NodeClaim
    resourceRequest: _containers.MessageMap[str, _k8s_resource_pb2.Quantity]
    priorityClassName: str
    resourceRequestBytes: _containers.ScalarMap[str, bytes]
    def __init__(self, nodeClaim: _Optional[_Union[NodeClaim, _Mapping]] = ..., resourceRequest: _Optional[_Mapping[str, _k8s_resource_pb2.Quantity]] = ..., priorityClassName: _Optional[str] = ..., resourceRequestBytes: _Optional[_Mapping[str, bytes]] = ...) -> None: ...

class AssumedWorkload(_message.Message):
    __slots__ = ("namespace", "components")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    components: _containers.RepeatedCompositeFieldContainer[Component]
    def __init__(self, namespace: _Optional[str] = ..., components: _Optional[_Iterable[_Union[Component, _Mapping]]] = ...) -> None: ...

class MaxAvailableComponentSetsRequest(_message.Message):
    __slots__ = ("cluster", "components", "namespace", "assumedWorkloads")
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ASSUMEDWORKLOADS_FIELD_NUMBER: _ClassVar[int]
    cluster: str
    components: _containers.RepeatedCompositeFieldContainer[Component]
    namespace: str
    assumedWorkloads: _containers.RepeatedCompositeFieldContainer[AssumedWorkload]
    def __init__(self, cluster: _Optional[str] = ..., components: _Optional[_Iterable[_Union[Component, _Mapping]]] = ..., namespace: _Optional[str] = ..., assumedWorkloads: _Optional[_Iterable[_Union[AssumedWorkload, _Mapping]]] = ...) -> None: ...

class MaxAvailableComponentSetsResponse(_message.Message):
    __slots__ = ("maxSets",)
    MAXSETS_FIELD_NUMBER: _ClassVar[int]
    maxSets: int
    def __init__(self, maxSets: _Optional[int] = ...) -> None: ...

class MaxAvailableReplicasRequest(_message.Message):
    __slots__ = ("cluster", "replicaRequirements", "assumedWorkloads")
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    REPLICAREQUIREMENTS_FIELD_NUMBER: _ClassVar[int]
    ASSUMEDWORKLOADS_FIELD_NUMBER: _ClassVar[int]
    cluster: str
    replicaRequirements: ReplicaRequirements
    assumedWorkloads: _containers.RepeatedCompositeFieldContainer[AssumedWorkload]
    def __init__(self, cluster: _Optional[str] = ..., replicaRequirements: _Optional[_Union[ReplicaRequirements, _Mapping]] = ..., assumedWorkloads: _Optional[_Iterable[_Union[AssumedWorkload, _Mapping]]] = ...) -> None: ...

class MaxAvailableReplicasResponse(_message.Message):
    __slots__ = ("maxReplicas",)
    MAXREPLICAS_FIELD_NUMBER: _ClassVar[int]
    maxReplicas: int
    def __init__(self, maxReplicas: _Optional[int] = ...) -> None: ...

class NodeClaim(_message.Message):
    __slots__ = ("nodeAffinity", "tolerations", "nodeSelector", "nodeAffinityBytes", "tolerationsBytes")
    class NodeSelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NODEAFFINITY_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    NODESELECTOR_FIELD_NUMBER: _ClassVar[int]
    NODEAFFINITYBYTES_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONSBYTES_FIELD_NUMBER: _ClassVar[int]
    nodeAffinity: _k8s_core_pb2.NodeSelector
    tolerations: _containers.RepeatedCompositeFieldContainer[_k8s_core_pb2.Toleration]
    nodeSelector: _containers.ScalarMap[str, str]
    nodeAffinityBytes: bytes
    tolerationsBytes: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, nodeAffinity: _Optional[_Union[_k8s_core_pb2.NodeSelector, _Mapping]] = ..., tolerations: _Optional[_Iterable[_Union[_k8s_core_pb2.Toleration, _Mapping]]] = ..., nodeSelector: _Optional[_Mapping[str, str]] = ..., nodeAffinityBytes: _Optional[bytes] = ..., tolerationsBytes: _Optional[_Iterable[bytes]] = ...) -> None: ...

class ObjectReference(_message.Message):
    __slots__ = ("apiVersion", "kind", "namespace", "name")
    APIVERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    apiVersion: str
    kind: str
    namespace: str
    name: str
    def __init__(self, apiVersion: _Optional[str] = ..., kind: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class ReplicaRequirements(_message.Message):
    __slots__ = ("nodeClaim", "resourceRequest", "namespace", "priorityClassName", "resourceRequestBytes")
    class ResourceRequestEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _k8s_resource_pb2.Quantity
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_k8s_resource_pb2.Quantity, _Mapping]] = ...) -> None: ...
    class ResourceRequestBytesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    NODECLAIM_FIELD_NUMBER: _ClassVar[int]
    RESOURCEREQUEST_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PRIORITYCLASSNAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCEREQUESTBYTES_FIELD_NUMBER: _ClassVar[int]
    nodeClaim: NodeClaim
    resourceRequest: _containers.MessageMap[str, _k8s_resource_pb2.Quantity]
    namespace: str
    priorityClassName: str
    resourceRequestBytes: _containers.ScalarMap[str, bytes]
    def __init__(self, nodeClaim: _Optional[_Union[NodeClaim, _Mapping]] = ..., resourceRequest: _Optional[_Mapping[str, _k8s_resource_pb2.Quantity]] = ..., namespace: _Optional[str] = ..., priorityClassName: _Optional[str] = ..., resourceRequestBytes: _Optional[_Mapping[str, bytes]] = ...) -> None: ...

class UnschedulableReplicasRequest(_message.Message):
    __slots__ = ("cluster", "resource", "unschedulableThreshold")
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    UNSCHEDULABLETHRESHOLD_FIELD_NUMBER: _ClassVar[int]
    cluster: str
    resource: ObjectReference
    unschedulableThreshold: int
    def __init__(self, cluster: _Optional[str] = ..., resource: _Optional[_Union[ObjectReference, _Mapping]] = ..., unschedulableThreshold: _Optional[int] = ...) -> None: ...

class UnschedulableReplicasResponse(_message.Message):
    __slots__ = ("unschedulableReplicas",)
    UNSCHEDULABLEREPLICAS_FIELD_NUMBER: _ClassVar[int]
    unschedulableReplicas: int
    def __init__(self, unschedulableReplicas: _Optional[int] = ...) -> None: ...
