// The replica channel: point-to-point messages between the replicas of one
// rank on kSiblingContext (replicator.h). The intra-parallel sections
// (intra/) send each task's update over it.
#include "ft/rep/replicator.h"

namespace ulmpi::rep {

rt::Status Replicator::isend_sibling(int replica, const ulm::DataRef& data, int tag,
                                     ulm::SendMsg** out)
{
    if (replica < 0 || replica >= set_.replicas() || replica == k_) {
        return rt::Errc::invalid_arg;
    }
    return eng_.isend_peer(data, set_.phys(replica, me_), tag, kSiblingContext,
                           ulm::SendMode::standard, out);
}

rt::Status Replicator::irecv_sibling(const ulm::DataRef& data, int tag, ulm::RecvMsg** out)
{
    return eng_.irecv(data, me_, tag, kSiblingContext, out);
}

bool Replicator::sibling_on_my_host(int replica) const
{
    if (replica < 0 || replica >= set_.replicas()) {
        return false;
    }
    return boot_.job().same_segment(set_.phys(k_, me_), set_.phys(replica, me_));
}

} // namespace ulmpi::rep
