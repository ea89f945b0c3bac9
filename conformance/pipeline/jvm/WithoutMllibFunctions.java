package conformance.pipeline;

import java.io.IOException;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;

/**
 * A thread context class loader under which a new Spark session does not load MLlib's SQL functions.
 *
 * <p>A Spark session, as it is built, asks {@link java.util.ServiceLoader} (through the thread's
 * context class loader) for every session extension provider its class path declares. The MLlib
 * jar declares one, which registers MLlib's SQL functions ({@code vector_to_array},
 * {@code array_to_vector}), which no check uses. Building them starts Scala's runtime reflection:
 * ~0.5 CPU-s on the single thread that starts a fresh driver. (The pipeline's first JSON parse
 * starts it anyway, later, on an executor thread that runs beside the driver's planning.) This
 * loader delegates everything to its parent, except that it leaves the MLlib jar's declaration out
 * of the provider lists it returns. It defines no class itself.
 *
 * <p>Use: {@link #install()} on the thread that builds the session, then {@link #restore} with
 * what it returned, once the session exists.
 */
public final class WithoutMllibFunctions extends ClassLoader {

    /** The resource {@link java.util.ServiceLoader} reads for session extension providers. */
    static final String PROVIDERS = "META-INF/services/org.apache.spark.sql.SparkSessionExtensionsProvider";

    private WithoutMllibFunctions(ClassLoader parent) {
        super(parent);
    }

    @Override
    public Enumeration<URL> getResources(String name) throws IOException {
        Enumeration<URL> found = super.getResources(name);
        if (!PROVIDERS.equals(name)) {
            return found;
        }
        List<URL> kept = new ArrayList<>();
        while (found.hasMoreElements()) {
            URL url = found.nextElement();
            if (!url.getPath().contains("/spark-mllib_")) {
                kept.add(url);
            }
        }
        return Collections.enumeration(kept);
    }

    /** Makes this loader the calling thread's context class loader; returns the one it replaced. */
    public static ClassLoader install() {
        Thread thread = Thread.currentThread();
        ClassLoader previous = thread.getContextClassLoader();
        thread.setContextClassLoader(new WithoutMllibFunctions(previous != null ? previous : getSystemClassLoader()));
        return previous;
    }

    /** Gives the calling thread back the context class loader {@link #install()} returned. */
    public static void restore(ClassLoader previous) {
        Thread.currentThread().setContextClassLoader(previous);
    }
}
