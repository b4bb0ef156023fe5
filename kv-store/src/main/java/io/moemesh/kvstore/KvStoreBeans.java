package io.moemesh.kvstore;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Disposes;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;
import java.time.InstantSource;

/** Makes the framework-free store a bean, sized by {@link KvStoreConfig}; frees its memory at shutdown. */
@ApplicationScoped
public class KvStoreBeans {

  @Produces
  @Singleton
  KvObjectStore store(KvStoreConfig config) {
    var limits = new KvObjectStore.Limits(config.maxBytes().asLongValue(), config.defaultLease(), config.maxLease(),
        config.putIdleTimeout());
    return new KvObjectStore(limits, InstantSource.system());
  }

  void close(@Disposes KvObjectStore store) {
    store.close();
  }
}
