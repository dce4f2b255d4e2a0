package io.github.hpm;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Misuse before the agent is loaded: runs in its own JVM (surefire reuseForks=false). */
class NotLoadedTest {
    @Test
    void nothingIsLoadedUntilAsked() {
        assertFalse(Hpm.isLoaded());
    }

    @Test
    void aMissingLibraryIsReportedWithWhatToDo() {
        HpmException e = assertThrows(HpmException.class, () -> Hpm.getInstance("/nonexistent/libhpm.so"));
        assertTrue(e.getMessage().contains("/nonexistent/libhpm.so"), e.getMessage());
        assertTrue(e.getMessage().contains("cargo build --release"), e.getMessage());
        assertFalse(Hpm.isLoaded());
    }

    @Test
    void aFileThatIsNoLibraryIsReported(@TempDir Path dir) throws Exception {
        Path bogus = Files.writeString(dir.resolve("libhpm.so"), "not a shared object");
        HpmException e = assertThrows(HpmException.class, () -> Hpm.getInstance(bogus.toString()));
        assertTrue(e.getMessage().startsWith("cannot load " + bogus), e.getMessage());
        assertFalse(Hpm.isLoaded());
    }

    @Test
    void anEmptyPathIsRefused() {
        HpmException e = assertThrows(HpmException.class, () -> Hpm.getInstance(""));
        assertTrue(e.getMessage().contains("-agentpath"), e.getMessage());
    }

    @Test
    void theSystemPropertyIsUsedAndChecked() {
        String old = System.getProperty(Hpm.AGENT_PATH_PROPERTY);
        System.setProperty(Hpm.AGENT_PATH_PROPERTY, "/nonexistent/again/libhpm.so");
        try {
            HpmException e = assertThrows(HpmException.class, Hpm::getInstance);
            assertTrue(e.getMessage().contains("/nonexistent/again/libhpm.so"), e.getMessage());
        } finally {
            if (old == null) {
                System.clearProperty(Hpm.AGENT_PATH_PROPERTY);
            } else {
                System.setProperty(Hpm.AGENT_PATH_PROPERTY, old);
            }
        }
    }
}
